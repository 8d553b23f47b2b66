"""The base of every validated model and the checked types their fields share (pydantic, pure: no Pulumi import).

`Model` forbids unknown keys and spells them one way per front end: camelCase in stack files, snake_case in Python
arguments (`validate_as`). The string types run an `admission` check, which names what is allowed.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
)
from pydantic.alias_generators import to_camel

from .. import admission

# Kubernetes counts (replicas, numOfHosts) are int32 in the API (apimachinery: `int32` fields of the KubeRay CRDs).
INT32_MAX = 2**31 - 1
NonNegativeInt = Annotated[StrictInt, Field(ge=0, le=INT32_MAX)]
PositiveInt = Annotated[StrictInt, Field(ge=1, le=INT32_MAX)]


def check_with(check: Callable[[str], None]) -> AfterValidator:
    """The validator of a string type: `check(value)` raises ValueError naming what is allowed."""

    def run(value: str) -> str:
        check(value)
        return value

    return AfterValidator(run)


# GKE cluster and node pool names allow 40; a slice's name leaves room for the pool index in its pools' names.
Name = Annotated[str, check_with(lambda v: admission.check_dns_label(v, 40))]
SliceName = Annotated[str, check_with(lambda v: admission.check_dns_label(v, 30))]
# A Kubernetes Secret's name is a DNS subdomain ("Object Names and IDs"); a DNS label of up to 63 is its usual form.
SecretName = Annotated[str, check_with(lambda v: admission.check_dns_label(v, 63))]
Namespace = Annotated[str, check_with(admission.check_namespace)]
Image = Annotated[str, check_with(admission.check_image)]
Cidr = Annotated[str, check_with(admission.check_cidr)]
Zone = Annotated[str, check_with(admission.check_zone)]
Location = Annotated[str, check_with(admission.check_location)]
GkeVersion = Annotated[str, check_with(admission.check_gke_version_pin)]
RayVersion = Annotated[str, check_with(admission.check_ray_version)]
Quantity = Annotated[str, check_with(admission.check_quantity)]
LabelValue = Annotated[str, check_with(admission.check_gcp_label_value)]


class Model(BaseModel):
    # validate_by_alias (camelCase) is the stack file's spelling; `validate_as(..., "args")` switches to field names.
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, validate_by_alias=True, validate_by_name=False, frozen=True
    )
    # Keys left out because they failed validation (`validate_partial`): locations as pydantic reports them.
    _dropped: frozenset = PrivateAttr(default=frozenset())

    def intact(self, *names: str) -> bool:
        """Whether none of these fields (or anything under them) was left out by `validate_partial`."""
        spelt = {n for name in names for n in (name, to_camel(name))}
        return not any(loc and loc[0] in spelt for loc in self._dropped)


M = TypeVar("M", bound=Model)


def validate_as(model: type[M], value: Any, style: str) -> M:
    """Validate with the one spelling of a front end: "stack" (camelCase keys) or "args" (snake_case)."""
    if isinstance(value, model):
        return value
    stack = style == "stack"
    return model.model_validate(value, by_alias=stack, by_name=not stack)
