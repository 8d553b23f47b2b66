"""ray-tpu-gke as a Pulumi component provider: RayTpuPlatform and TpuSlicePools for TypeScript, Go, C#, Java and YAML.

Consumers run `pulumi package add <this folder, or <your-git-host>/<org>/ray-tpu-gke/provider@v0.3.0>`; the Pulumi
CLI starts this program through the Python language host (PulumiPlugin.yaml), asks it for its schema and generates
an SDK (or, for YAML, reads the schema directly). The SDK infers the schema from the components' type annotations:
the TypedDict annotation of each constructor's `args` gives the inputs (camelCase in the schema, nested TypedDicts
as object types, `Required[...]` keys as required, attribute docstrings as descriptions) and the class's
`pulumi.Output[...]` annotations give the outputs. The constructor receives the inputs back in snake_case, as a
Python program passes them, and validates them as it always does: a bad argument fails with the component's
ConfigError before anything is registered.

The other components (GkeCluster, RayCluster, RayService, RayJob) take a Kubernetes provider object or several
resources' outputs, so other languages compose them through RayTpuPlatform.
"""

import inspect
import sys
import typing

from pulumi.provider import main
from pulumi.provider.experimental.analyzer import PropertyDefinition, PropertyType
from pulumi.provider.experimental.component import ComponentProvider

import ray_tpu_gke
from ray_tpu_gke import RayTpuPlatform, TpuSlicePools

NAME = "ray-tpu-gke"
COMPONENTS = (RayTpuPlatform, TpuSlicePools)


class HostedProvider(ComponentProvider):
    """The SDK's ComponentProvider, handing integer inputs to the components as integers.

    Every number reaches a provider as a float (protobuf's Struct has no integers). The SDK means to convert the
    schema's integer properties back, but in pulumi 3.272 the converted value is overwritten by the raw one, so
    `count: 2` arrived as 2.0 and the components' strict validation refused it. Whole numbers in integer properties
    (also in lists and maps of them) become ints here; anything else is left for the component to reject.
    """

    def map_input_properties(self, inputs, properties, mapping, component_name, property_path):
        mapped = super().map_input_properties(inputs, properties, mapping, component_name, property_path)
        for schema_name, prop in properties.items():
            python_name = mapping[schema_name]
            if python_name in mapped:
                mapped[python_name] = _integers(mapped[python_name], prop)
        return mapped


def _integers(value, prop: PropertyDefinition):
    if prop.ref:  # object types are mapped property by property, through map_input_properties
        return value
    if prop.type == PropertyType.INTEGER and isinstance(value, float) and value.is_integer():
        return int(value)
    if prop.type == PropertyType.ARRAY and prop.items is not None and isinstance(value, list):
        return [_integers(item, prop.items) for item in value]
    if prop.type == PropertyType.OBJECT and prop.additional_properties is not None and isinstance(value, dict):
        return {key: _integers(item, prop.additional_properties) for key, item in value.items()}
    return value


def provider() -> HostedProvider:
    """The provider the plugin serves: its schema is what `pulumi package add` reads."""
    return HostedProvider(hosted_components(), NAME, None, ray_tpu_gke.__version__)


def hosted_components() -> list[type]:
    """The hosted components, with every annotation the schema is inferred from evaluated."""
    seen: set[type] = set()
    for component in COMPONENTS:
        _evaluate_component(component, seen)
    return list(COMPONENTS)


# The SDK's analyzer reads `inspect.get_annotations` as they are, without evaluating them. A module written with `from
# __future__ import annotations` keeps its annotations as text (classes and functions) or as ForwardRefs (TypedDicts),
# which the analyzer cannot read (it fails on `'str' object has no attribute '__mro__'`), and a TypedDict's
# `Required[...]` keys then all look optional. Evaluating them in their own module once, here, gives the analyzer the
# types a module without that import would have; annotations that are already types are left as they are.


def _evaluate(annotation, module: str):
    if isinstance(annotation, typing.ForwardRef):
        module = annotation.__forward_module__ or module
        annotation = annotation.__forward_arg__
    if isinstance(annotation, str):
        # Only the top level: the SDK's own `Input[T]` keeps its ForwardRef to `Output[T]`, which the analyzer expects.
        return eval(annotation, vars(sys.modules[module]))  # noqa: S307 annotations of the library's own source
    return annotation


def _evaluate_all(annotations: dict, module: str) -> dict:
    return {key: _evaluate(value, module) for key, value in annotations.items()}


def _evaluate_component(component: type, seen: set[type]) -> None:
    component.__annotations__ = _evaluate_all(inspect.get_annotations(component), component.__module__)
    init = component.__init__
    init.__annotations__ = _evaluate_all(inspect.get_annotations(init), init.__module__)
    _evaluate_types(init.__annotations__.get("args"), seen)
    for annotation in component.__annotations__.values():
        _evaluate_types(annotation, seen)


def _evaluate_types(annotation, seen: set[type]) -> None:
    """Evaluate the annotations of every TypedDict reachable from `annotation` (nested, in lists, maps, Required)."""
    if typing.is_typeddict(annotation):
        if annotation in seen:
            return
        seen.add(annotation)
        annotation.__annotations__ = _evaluate_all(annotation.__annotations__, annotation.__module__)
        for nested in annotation.__annotations__.values():
            _evaluate_types(nested, seen)
        return
    for nested in typing.get_args(annotation):
        _evaluate_types(nested, seen)


if __name__ == "__main__":
    # What `pulumi.provider.experimental.component_provider_host(COMPONENTS, NAME, version=...)` does, with the
    # provider above in place of the SDK's own: serve it on the port it prints, for the engine's address in argv.
    main(provider(), sys.argv[1:])
