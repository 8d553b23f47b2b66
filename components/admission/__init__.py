"""What GKE, Compute Engine, Kubernetes, KubeRay and Ray accept: every rule once, each with its source. No Pulumi.

Config validation, the components, the policy pack and the tests all ask this package, so a rule learned once (a
label value, a version, what fits a node) holds everywhere. `RULES` lists them for reviewers (docs/admission.md is
generated from `markdown()` and checked by a test). Checks raise `ValueError` with a message that says what is
allowed; callers add the key path and the value.

One module per concern: `names` (names, labels, images, quantities), `versions` (locations, networks, GKE versions
and what each feature needs), `nodes` (cluster shape, machine types, what fits a node), `pods` (reservations, KubeRay
and Ray's autoscaler, pod labels), `quota`, `gpu`, `alerting` (alert policy conditions), `cron` (CronJob
schedules), `serve` (Ray Serve configs), `runtime` (a RayJob's entrypoint, runtime environments), `llm` (LLM services
on vLLM). The public names of all of them are this package's.
"""

# Imported in this order: the rules register in it, and docs/admission.md lists them so.
# isort: off
# In this order: the rules register as they are imported, and docs/admission.md lists them so.
from .rules import *  # noqa: F403
from .names import *  # noqa: F403
from .versions import *  # noqa: F403
from .nodes import *  # noqa: F403
from .pods import *  # noqa: F403
from .quota import *  # noqa: F403
from .gpu import *  # noqa: F403
from .alerting import *  # noqa: F403
from .cron import *  # noqa: F403
from .serve import *  # noqa: F403
from .runtime import *  # noqa: F403
from .llm import *  # noqa: F403
