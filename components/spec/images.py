"""Which accelerator an image of this repository is built for, and the rule that a Ray worker group runs the variant
of its accelerator.

The repository builds its workloads image in two variants (workloads/Dockerfile, docs/workloads.md): `workloads-tpu`
(JAX with libtpu) and `workloads-gpu` (JAX with its CUDA plugin). The last path component of the image names the
variant. A TPU worker on the GPU variant finds no TPU backend, and a GPU worker on the TPU variant no CUDA one (Ray
2.55 sets JAX_PLATFORMS=cuda on GPU workers: ray/train/v2/jax/config.py), so the job would fail after its nodes were
provisioned: the plan refuses the mix. Images of other repositories are the user's to choose.
"""

from __future__ import annotations

import re
from typing import Optional

# <registry>/<path>/workloads-<variant>[:tag][@digest]
_VARIANT = re.compile(r"(?:^|/)workloads-(tpu|gpu)(?:[:@]|$)")
# What a worker group's target needs: a slice runs TPU workers, a GPU pool GPU workers.
NEEDS = {"slice": "tpu", "gpu_pool": "gpu"}


def variant(image: str) -> Optional[str]:
    """`tpu` or `gpu` for this repository's workloads images, None for any other image."""
    found = _VARIANT.search(image) if isinstance(image, str) else None
    return found.group(1) if found else None


def mismatch(image: str, target_kind: str) -> Optional[str]:
    """Why a group on `target_kind` (slice, gpu_pool, cpu_pool) cannot run `image`; None when it can."""
    have, need = variant(image), NEEDS.get(target_kind)
    if have is None or need is None or have == need:
        return None
    return (
        f"{image} is the {have.upper()} variant of the repository's workloads image, but the group runs on a "
        f"{'TPU slice' if need == 'tpu' else 'GPU pool'}; allowed: the {need.upper()} variant "
        f"({image.replace(f'workloads-{have}', f'workloads-{need}')}) in a Ray object of its own"
    )
