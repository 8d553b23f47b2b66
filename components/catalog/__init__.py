"""The catalogue: every TPU and GPU number, and the data tables (prices, metrics), each with its source. No Pulumi.

`ray_tpu_gke.catalog` is public: `slice_shape(generation, topology, machine_type=None)` for TPU slices (`tpu`),
`gpu_machine(accelerator, machine_type=None)` for GPU pools (`gpu`), what Autopilot accepts per pod (`autopilot`),
`peak(kind, name)` for what one TPU chip or GPU can do at most (`peaks`). The price table (`prices`) and the metric
list (`metrics`) are read by `render`.
"""

from .autopilot import *  # noqa: F403
from .gpu import *  # noqa: F403
from .peaks import *  # noqa: F403
from .tpu import *  # noqa: F403
