"""Issue #22.10: warnings are one line each, never wrapped, whatever their length."""

import io

from helpers import minimal_values

from plan import stackfile
from ray_tpu_gke.spec.config import parse_stack_config


def test_each_warning_is_one_unwrapped_line():
    values = minimal_values()
    values["ray-tpu-gke:tpuSlices"][0]["zone"] = "us-east5-c"  # not known to offer v6e: a long warning
    values["ray-tpu-gke:cluster"]["location"] = "us-east5"
    (warning,) = parse_stack_config(values, "test").warnings
    assert len(warning) > 120 and "\n" not in warning
    out = io.StringIO()
    stackfile.print_warnings([warning, "two\nlines"], file=out)
    assert out.getvalue().splitlines() == [f"warning: {warning}", "warning: two lines"]
