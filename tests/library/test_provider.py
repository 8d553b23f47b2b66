"""The component provider (provider/): the schema it answers GetSchema with, constructs through it under mocks, the
hosted plugin process itself, and the Pulumi YAML example checked against the schema (no Pulumi CLI here)."""

import json
import re
import sys
import textwrap

import pytest
import yaml
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import ProviderServicer
from pulumi.runtime.proto import provider_pb2

import ray_tpu_gke
from helpers import ROOT, module_from_file
from provider_plugin import PROVIDER, serve

from plan import harness

YAML_EXAMPLE = ROOT / "examples" / "yaml" / "Pulumi.yaml"
PACKAGE = "ray-tpu-gke"
PLATFORM = f"{PACKAGE}:index:RayTpuPlatform"
POOLS = f"{PACKAGE}:index:TpuSlicePools"


def load_provider_module():
    """provider/__main__.py as a module (its host only starts when it runs as the program)."""
    return module_from_file(PROVIDER / "__main__.py", "ray_tpu_gke_provider")


@pytest.fixture(scope="module")
def provider_module():
    return load_provider_module()


@pytest.fixture(scope="module")
def schema(provider_module):
    """The schema as the provider answers the engine's GetSchema call."""
    servicer = ProviderServicer(provider_module.provider(), [], engine_address="")
    import asyncio

    response = asyncio.run(servicer.GetSchema(provider_pb2.GetSchemaRequest(), None))
    return json.loads(response.schema)


def ref_type(schema, prop):
    return schema["types"][prop["$ref"].removeprefix("#/types/")]


# --- the plugin's files ----------------------------------------------------------------------------------------------


def test_plugin_manifest_and_requirements():
    manifest = yaml.safe_load((PROVIDER / "PulumiPlugin.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    requirements = [line.strip() for line in (PROVIDER / "requirements.txt").read_text().splitlines()
                    if line.strip() and not line.lstrip().startswith("#")]
    assert requirements == [".."]
    assert (PROVIDER / requirements[0]).resolve() == ROOT  # the library's own pyproject.toml
    assert (ROOT / "pyproject.toml").is_file()


def test_provider_hosts_both_components_under_the_package_version(provider_module):
    provider = provider_module.provider()
    assert isinstance(provider, ComponentProvider)
    assert provider._name == PACKAGE and provider.version == ray_tpu_gke.__version__
    assert provider._components == {"RayTpuPlatform": ray_tpu_gke.RayTpuPlatform,
                                    "TpuSlicePools": ray_tpu_gke.TpuSlicePools}


# --- the inferred schema ---------------------------------------------------------------------------------------------


def test_schema_names_the_package_and_both_components(schema):
    assert schema["name"] == PACKAGE
    assert schema["version"] == ray_tpu_gke.__version__
    assert set(schema["resources"]) == {PLATFORM, POOLS}
    for resource in schema["resources"].values():
        assert resource["isComponent"] is True
        assert resource["description"]


def test_slice_pools_inputs_are_typed_with_required_marked(schema):
    pools = schema["resources"][POOLS]
    inputs = pools["inputProperties"]
    assert sorted(pools["requiredInputs"]) == ["cluster", "location", "project", "slice"]
    assert {"project", "cluster", "location", "slice", "nodeServiceAccount", "labels", "environment",
            "deletionProtection"} <= set(inputs)
    assert inputs["project"]["type"] == "string"
    assert inputs["cluster"]["type"] == "string" and "plain" not in inputs["cluster"]  # an Input: an output may flow in
    assert inputs["deletionProtection"]["type"] == "boolean"
    assert inputs["labels"] == {**inputs["labels"], "type": "object"}
    assert inputs["labels"]["additionalProperties"]["type"] == "string"
    assert inputs["cluster"]["description"] == "Name (or id) of the cluster, e.g. `my_cluster.name`."
    tpu_slice = ref_type(schema, inputs["slice"])
    assert inputs["slice"]["$ref"] == f"#/types/{PACKAGE}:index:TpuSliceArgs"
    assert sorted(tpu_slice["required"]) == ["generation", "name", "topology"]
    assert tpu_slice["properties"]["count"]["type"] == "integer"
    assert tpu_slice["properties"]["machineType"]["description"].startswith("Picks a layout where several are valid")
    assert tpu_slice["properties"]["topology"]["description"] == "Chips per dimension, e.g. 4x4 or 2x2x4."
    assert tpu_slice["description"] == "A TPU slice shape from the catalogue, how many of it, and the capacity it runs on."
    autoscaling = ref_type(schema, tpu_slice["properties"]["autoscaling"])
    assert set(autoscaling["properties"]) == {"enabled", "minNodes"}


def test_schema_has_every_field_the_declarations_accept(schema):
    """Every key the models accept (a stack file's, in camelCase) is a property of its schema type, and nothing else
    is: the schema's types and the components' inputs are generated from the same declarations (scripts/generate.py).
    Types of the components the provider does not host (GkeCluster's, the Ray objects', SliceMonitoring's) are not
    in the schema."""
    from pydantic.alias_generators import to_camel

    from scripts import generate

    declared = generate.declarations()
    types = {name.removeprefix(f"{PACKAGE}:index:"): spec for name, spec in schema["types"].items()}
    assert types, "the schema has no object types"
    for name, spec in types.items():
        model = declared[name]
        fields = {to_camel(f) for f in model.model_fields}
        assert set(spec["properties"]) == fields, f"{name}: schema {sorted(spec['properties'])} != {sorted(fields)}"
        required = {to_camel(f) for f, info in model.model_fields.items() if info.is_required()}
        assert set(spec.get("required", [])) == required, name
    inputs = generate.inputs
    for token, model in ((PLATFORM, inputs.RayTpuPlatformInputs), (POOLS, inputs.TpuSlicePoolsInputs)):
        assert set(schema["resources"][token]["inputProperties"]) == {to_camel(f) for f in model.model_fields}, token
    # The keys the issue found missing from the hand-written TypedDicts are there.
    assert {"upgrade"} <= set(types["TpuSliceArgs"]["properties"])
    assert {"maintenance"} <= set(types["ClusterSpecArgs"]["properties"])
    assert {"sliceHealth", "pendingPodsMinutes"} <= set(types["MonitoringArgs"]["properties"])
    # Every model a hosted component nests is in the schema.
    hosted = {"RayTpuPlatformArgs", "TpuSlicePoolsArgs"}
    nested = set()

    def walk(model):
        for info in model.model_fields.values():
            for inner in generate._models_in(info.annotation):
                if generate.args_name(inner) not in nested:
                    nested.add(generate.args_name(inner))
                    walk(inner)

    for name in hosted:
        walk(declared[name])
    assert nested == set(types)


def test_slice_pools_outputs(schema):
    pools = schema["resources"][POOLS]
    assert sorted(pools["required"]) == ["nodeSelector", "poolNames"]
    assert pools["properties"]["poolNames"]["type"] == "array"
    assert pools["properties"]["poolNames"]["items"]["type"] == "string"
    assert pools["properties"]["nodeSelector"]["additionalProperties"]["type"] == "string"
    assert pools["properties"]["poolNames"]["description"] == "Names of the node pools, one per slice."


def test_platform_inputs_and_outputs(schema):
    platform = schema["resources"][PLATFORM]
    inputs = platform["inputProperties"]
    assert sorted(platform["requiredInputs"]) == ["cluster", "project"]
    assert {"project", "region", "environment", "team", "costCenter", "cluster", "storage", "tpuSlices",
            "rayClusters", "rayServices", "rayJobs"} <= set(inputs)
    assert inputs["project"]["description"] == "Google Cloud project ID."
    # The platform's slices are the very type TpuSlicePools takes.
    assert inputs["tpuSlices"]["type"] == "array"
    assert inputs["tpuSlices"]["items"]["$ref"] == f"#/types/{PACKAGE}:index:TpuSliceArgs"
    cluster = ref_type(schema, inputs["cluster"])
    assert sorted(cluster["required"]) == ["location", "name"]
    assert cluster["properties"]["mode"]["description"].startswith("standard or autopilot")
    ray = ref_type(schema, inputs["rayClusters"]["items"])
    assert sorted(ray["required"]) == ["name", "workerGroups"]  # a RayCluster's model requires its worker groups
    group = ref_type(schema, ray["properties"]["workerGroups"]["items"])
    assert sorted(group["required"]) == ["name"]  # and exactly one of slice, gpuPool, cpuPool (checked on construct)
    assert group["properties"]["replicas"]["type"] == "integer"
    service = ref_type(schema, inputs["rayServices"]["items"])
    assert sorted(service["required"]) == ["name", "workerGroups"]  # and exactly one of serveConfig, llm (on construct)
    assert service["properties"]["llm"]["$ref"].endswith(":index:LlmArgs")
    assert service["properties"]["serveConfig"]["additionalProperties"]["$ref"] == "pulumi.json#/Any"
    job = ref_type(schema, inputs["rayJobs"]["items"])
    assert sorted(job["required"]) == ["entrypoint", "name"]

    outputs = platform["properties"]
    assert {"clusterName", "kubeconfig", "bucket", "poolNames"} <= set(outputs)
    assert outputs["clusterName"]["type"] == "string"
    assert outputs["kubeconfig"]["description"].startswith("A kubeconfig for the cluster")
    assert outputs["poolNames"]["items"]["type"] == "string"


def test_every_type_reference_resolves(schema):
    refs = re.findall(r'"\$ref": "#/types/([^"]+)"', json.dumps(schema))
    assert refs and set(refs) <= set(schema["types"])
    assert f"{PACKAGE}:index:TpuSliceArgs" in schema["types"]


# --- the plugin process ----------------------------------------------------------------------------------------------


def test_plugin_process_serves_schema_and_version(schema):
    served, version = serve(sys.executable)
    assert version == ray_tpu_gke.__version__
    assert served == schema
    assert set(served["resources"]) == {PLATFORM, POOLS}
    assert served["types"][f"{PACKAGE}:index:TpuSliceArgs"]["required"] == ["generation", "name", "topology"]


# --- construct, under mocks ------------------------------------------------------------------------------------------

# A program that does what the provider does on the engine's Construct call: inputs arrive as a protobuf Struct
# (numbers as floats, camelCase names), the ComponentProvider maps them to the component's args and builds it.
CONSTRUCT_PROGRAM = textwrap.dedent("""
    import importlib.util

    import pulumi
    from google.protobuf import struct_pb2
    from pulumi.runtime import rpc

    spec = importlib.util.spec_from_file_location("ray_tpu_gke_provider", {main!r})
    hosted = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hosted)
    provider = hosted.provider()
    for request in pulumi.Config("construct").require_object("requests"):
        wire = struct_pb2.Struct()
        wire.update(request["inputs"])
        inputs = rpc.deserialize_properties(wire, keep_unknowns=True)
        result = provider.construct(request["name"], request["type"], inputs, pulumi.ResourceOptions())
        for key, value in result.state.items():
            pulumi.export(f"{{request['name']}}.{{key}}", value)
""")


def construct(tmp_path, requests: list[dict], project: str = "acme-ml-dev") -> harness.Plan:
    program = tmp_path / "__main__.py"
    program.write_text(CONSTRUCT_PROGRAM.format(main=str(PROVIDER / "__main__.py")))
    return harness.run_program("dev", {"gcp:project": project, "construct:requests": requests}, program=program)


def steps(plan, type_):
    return [s for s in plan.steps if s.type == type_]


def test_construct_slice_pools_through_the_provider(tmp_path):
    plan = construct(tmp_path, [{"name": "train", "type": POOLS, "inputs": {
        "project": "acme-ml-dev", "cluster": "ml-shared", "location": "us-east5-b",
        "slice": {"name": "v6e-16", "generation": "v6e", "topology": "4x4", "count": 2, "capacity": "spot"},
        "labels": {"team": "ml"}, "deletionProtection": False,
    }}])
    shape = ray_tpu_gke.slice_shape("v6e", "4x4")
    assert [s.name for s in steps(plan, POOLS)] == ["train"]
    pools = steps(plan, "gcp:container/nodePool:NodePool")
    assert [p.name for p in pools] == ["v6e-16-0", "v6e-16-1"]
    for pool in pools:
        assert pool.parent.endswith(f"{POOLS}::train")
        assert pool.inputs["cluster"] == "ml-shared"
        assert pool.inputs["nodeCount"] == shape.hosts == 4
        assert pool.inputs["nodeConfig"]["machineType"] == shape.machine_type.name
        assert pool.inputs["nodeConfig"]["spot"] is True
        assert pool.inputs["nodeConfig"]["resourceLabels"] == {"team": "ml"}
        assert pool.inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"}
        assert pool.protect is False
    assert plan.outputs["train.poolNames"] == ["v6e-16-0", "v6e-16-1"]
    assert plan.outputs["train.nodeSelector"] == {**shape.node_selector, "ray-tpu-gke/slice": "v6e-16"}


def test_construct_platform_through_the_provider(tmp_path):
    plan = construct(tmp_path, [{"name": "platform", "type": PLATFORM, "inputs": {
        "project": "acme-ml-dev", "region": "us-east5",
        "cluster": {"name": "ray-tpu", "location": "us-east5-b", "deletionProtection": False},
        "tpuSlices": [{"name": "v6e-8", "generation": "v6e", "topology": "2x4"}],
        "rayClusters": [{"name": "train", "workerGroups": [{"name": "tpu", "slice": "v6e-8", "replicas": 1}]}],
    }}])
    assert [s.name for s in steps(plan, PLATFORM)] == ["platform"]
    assert [s.inputs["name"] for s in steps(plan, "gcp:container/cluster:Cluster")] == ["ray-tpu"]
    ray = steps(plan, "kubernetes:ray.io/v1:RayCluster")
    assert len(ray) == 1
    worker = ray[0].inputs["spec"]["workerGroupSpecs"][0]
    assert worker["numOfHosts"] == ray_tpu_gke.slice_shape("v6e", "2x4").hosts
    assert plan.outputs["platform.clusterName"] == "ray-tpu"
    assert plan.outputs["platform.poolNames"] == ["v6e-8-0"]
    assert plan.outputs["platform.kubeconfig"] == "[secret]"


def test_construct_with_a_missing_required_input_names_it(tmp_path):
    with pytest.raises(Exception, match=r"Missing required input 'slice\.topology' on 'TpuSlicePools'"):
        construct(tmp_path, [{"name": "train", "type": POOLS, "inputs": {
            "project": "p", "cluster": "c", "location": "us-east5-b",
            "slice": {"name": "v6e-8", "generation": "v6e"}}}])


def test_construct_with_a_bad_value_fails_with_the_components_error(tmp_path):
    with pytest.raises(Exception) as raised:
        construct(tmp_path, [{"name": "train", "type": POOLS, "inputs": {
            "project": "p", "cluster": "c", "location": "us-east5-b",
            "slice": {"name": "v6e-9", "generation": "v6e", "topology": "3x3"}}}])
    error = raised.value
    inner = getattr(error, "inner", error)  # the provider wraps what the constructor raises (ComponentInitError)
    assert isinstance(inner, ray_tpu_gke.ConfigError)
    assert 'TpuSlicePools(train).args.slice.topology: "3x3" is not a v6e topology' in str(inner)


# --- the Pulumi YAML example, against the schema ---------------------------------------------------------------------

INTERPOLATION = re.compile(r"\$\{([^}]+)\}")


def yaml_program():
    return yaml.safe_load(YAML_EXAMPLE.read_text())


def resource_type(token: str) -> str:
    """`pkg:Type` and `pkg:index:Type` name the same resource in Pulumi YAML."""
    parts = token.split(":")
    return f"{parts[0]}:index:{parts[1]}" if len(parts) == 2 else token


def schema_problems(schema, value, prop, path, program) -> list[str]:
    """What a YAML value does wrong against a schema property: unknown or missing keys, wrong types, references to
    outputs that do not exist or that flow into a property the component needs as a plain value."""
    if isinstance(value, str) and INTERPOLATION.fullmatch(value):
        reference = INTERPOLATION.fullmatch(value).group(1)
        if "." in reference:
            name, output = reference.split(".", 1)
            if prop.get("plain"):
                return [f"{path}: {value} is an output, but the component needs a plain value here"]
            return reference_problems(schema, program, name, output, path)
        return [] if reference in program.get("config", {}) else [f"{path}: {value} names no config key"]
    if "$ref" in prop and prop["$ref"].startswith("#/types/"):
        return object_problems(schema, value, ref_type(schema, prop), path, program)
    if "$ref" in prop:  # pulumi.json#/Any
        return []
    kind = prop.get("type")
    if kind == "array":
        if not isinstance(value, list):
            return [f"{path}: must be a list"]
        return [p for i, item in enumerate(value) for p in schema_problems(schema, item, prop["items"], f"{path}[{i}]",
                                                                           program)]
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{path}: must be a mapping"]
        return [p for key, item in value.items()
                for p in schema_problems(schema, item, prop["additionalProperties"], f"{path}.{key}", program)]
    python = {"string": str, "boolean": bool, "integer": int, "number": (int, float)}[kind]
    if not isinstance(value, python) or (kind in ("integer", "number") and isinstance(value, bool)):
        return [f"{path}: {value!r} is not a {kind}"]
    return []


def object_problems(schema, value, type_, path, program, required_key="required", properties_key="properties"):
    if not isinstance(value, dict):
        return [f"{path}: must be a mapping"]
    properties = type_[properties_key]
    problems = [f"{path}.{key}: no such property (allowed: {', '.join(sorted(properties))})"
                for key in value if key not in properties]
    problems += [f"{path}.{key}: required" for key in type_.get(required_key, []) if key not in value]
    for key, item in value.items():
        if key in properties:
            problems += schema_problems(schema, item, properties[key], f"{path}.{key}", program)
    return problems


def reference_problems(schema, program, name, output, path) -> list[str]:
    resource = program.get("resources", {}).get(name)
    if resource is None:
        return [f"{path}: ${{{name}.{output}}} names no resource"]
    token = resource_type(resource["type"])
    if token not in schema["resources"]:
        return []  # another package's resource: not this schema's to check
    if output not in schema["resources"][token]["properties"]:
        return [f"{path}: {token} has no output {output}"]
    return []


def test_yaml_example_uses_the_local_provider():
    program = yaml_program()
    assert program["runtime"] == "yaml"
    assert (YAML_EXAMPLE.parent / program["packages"][PACKAGE]).resolve() == PROVIDER


def test_yaml_example_matches_the_schema(schema):
    program = yaml_program()
    hosted = {name: r for name, r in program["resources"].items() if r["type"].startswith(f"{PACKAGE}:")}
    assert {resource_type(r["type"]) for r in hosted.values()} == {PLATFORM, POOLS}
    problems = []
    for name, resource in hosted.items():
        token = resource_type(resource["type"])
        assert token in schema["resources"], f"{name}: {resource['type']} is not in the schema"
        problems += object_problems(schema, resource.get("properties", {}), schema["resources"][token],
                                    f"resources.{name}.properties", program, "requiredInputs", "inputProperties")
    for key, value in program.get("outputs", {}).items():
        problems += schema_problems(schema, value, {"type": "string"}, f"outputs.{key}", program)
    assert problems == []


def test_the_schema_check_catches_mistakes(schema):
    """The check above is not vacuous: a misspelt key, a missing required key, a wrong type and a wrong output."""
    program = yaml_program()
    pools = next(r for r in program["resources"].values() if resource_type(r["type"]) == POOLS)
    properties = json.loads(json.dumps(pools["properties"]))
    properties["slice"]["topolgy"] = properties["slice"].pop("topology")
    properties["slice"]["count"] = "two"
    properties["cluster"] = "${platform.clusterNme}"
    problems = object_problems(schema, properties, schema["resources"][POOLS], "p", program, "requiredInputs",
                               "inputProperties")
    assert any("p.slice.topolgy: no such property" in p for p in problems)
    assert "p.slice.topology: required" in problems
    assert "p.slice.count: 'two' is not a integer" in problems
    assert any("has no output clusterNme" in p for p in problems)


def test_yaml_example_constructs_through_the_provider(tmp_path):
    """The YAML program's own inputs, as the engine would send them once config and the platform's outputs are known,
    pass the components' validation and register what the example promises."""
    program = yaml_program()
    config = {key: spec.get("default") for key, spec in program["config"].items()}
    config["project"] = "acme-ml-dev"
    known_outputs = {"platform.clusterName": program["resources"]["platform"]["properties"]["cluster"]["name"]}

    def resolve(value):
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, str) and INTERPOLATION.fullmatch(value):
            reference = INTERPOLATION.fullmatch(value).group(1)
            return known_outputs[reference] if "." in reference else config[reference]
        return value

    requests = [{"name": name, "type": resource_type(r["type"]), "inputs": resolve(r["properties"])}
                for name, r in program["resources"].items() if r["type"].startswith(f"{PACKAGE}:")]
    plan = construct(tmp_path, requests)
    pools = {s.name: s for s in steps(plan, "gcp:container/nodePool:NodePool")}
    assert {"v6e-16-0", "v5e-4-0", "v5e-4-1"} <= set(pools)
    assert pools["v5e-4-0"].inputs["cluster"] == "ray-tpu-yaml"
    assert pools["v5e-4-0"].inputs["nodeConfig"]["machineType"] == ray_tpu_gke.slice_shape("v5e", "2x2").machine_type.name
    assert plan.outputs["batch-slices.poolNames"] == ["v5e-4-0", "v5e-4-1"]
    assert plan.outputs["platform.poolNames"] == ["v6e-16-0"]
