"""KubeRay objects against the real KubeRay CRDs (two releases, strictly), and the GKE TPU webhook's rules.

Every RayCluster, RayService and RayJob the program would create must use only fields that both the older (v1.3.2)
and the newest (v1.7.0) KubeRay CRD list (the GKE Ray Operator add-on ships one of them, and the API server drops an
unknown field silently). Every TPU worker group must also pass what the GKE TPU webhook checks when the pods are
created: numOfHosts matches the slice's topology, whole chips per host, the topology node selector, and Ray's TPU
resource left to KubeRay.
"""

from __future__ import annotations

import copy
import math

import kuberay_schema
import pytest
from helpers import STACKS, minimal_values, plan_of

from ray_tpu_gke import catalog
from ray_tpu_gke.render import manifests
from ray_tpu_gke.spec.config import parse_stack_config

RAY_TYPES = {f"kubernetes:ray.io/v1:{kind}" for kind in kuberay_schema.KINDS}
RELEASES = kuberay_schema.RELEASES
CONTEXT = manifests.RenderContext(standard=False, service_account="ray", bucket="b")


# --- helpers -------------------------------------------------------------------------------------------------------


def ray_objects(stack: str) -> list[tuple[str, dict]]:
    """(step name, manifest) of every KubeRay object in a stack's plan, rebuilt from the step's inputs."""
    found = []
    for step in plan_of(stack)["steps"]:
        state = step["newState"]
        if state["type"] in RAY_TYPES:
            inputs = state["inputs"]
            found.append((state["name"], {key: inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}))
    return found


def assert_valid(manifest: dict, release: str, label: str = "") -> None:
    problems = kuberay_schema.errors(manifest, release)
    name = label or manifest["metadata"]["name"]
    assert not problems, f"{name} ({manifest['kind']}) is not valid against the KubeRay {release} CRD:\n" + "\n".join(
        f"  {p}" for p in problems)


def cluster_spec(manifest: dict) -> dict:
    """Where each kind keeps its RayCluster spec (read here independently of components.manifests)."""
    spec = manifest["spec"]
    return {"RayCluster": lambda: spec, "RayService": lambda: spec["rayClusterConfig"],
            "RayJob": lambda: spec.get("rayClusterSpec", {})}[manifest["kind"]]()


def pod_tpu(pod_spec: dict, which: str) -> list:
    return [c.get("resources", {}).get(which, {}).get(catalog.TPU_RESOURCE) for c in pod_spec.get("containers", [])]


def is_tpu_group(group: dict) -> bool:
    pod = group.get("template", {}).get("spec", {})
    return catalog.ACCELERATOR_LABEL in pod.get("nodeSelector", {}) or any(
        v is not None for which in ("limits", "requests") for v in pod_tpu(pod, which))


def whole_chips(value) -> int | None:
    """A TPU quantity as a whole number of chips, or None when it is not one ("4", 4: yes; "0.5", "4m", 4.0: no)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def generation_of(accelerator: str) -> catalog.Generation | None:
    return next((g for g in catalog.GENERATIONS.values() if g.accelerator == accelerator), None)


def webhook_problems(manifest: dict) -> list[str]:
    """What the GKE TPU webhook (and KubeRay's TPU handling) would reject in a manifest's TPU worker groups."""
    problems = []
    spec = cluster_spec(manifest)
    groups = spec.get("workerGroupSpecs", [])
    for i, group in enumerate(groups):
        if not is_tpu_group(group):
            continue
        where = f"workerGroupSpecs[{i}] ({group.get('groupName')})"
        pod = group.get("template", {}).get("spec", {})
        selector = pod.get("nodeSelector", {})
        params = group.get("rayStartParams", {})
        for key, value in params.items():
            if not isinstance(value, str):
                problems.append(f"{where}: rayStartParams[{key!r}] is {value!r}, not a string")
        if "TPU" in str(params.get("resources", "")):
            problems.append(f"{where}: rayStartParams.resources declares TPU by hand ({params['resources']!r}); "
                            "KubeRay derives Ray's TPU resource from the google.com/tpu limit")
        limits, requests = pod_tpu(pod, "limits"), pod_tpu(pod, "requests")
        if limits != requests:
            problems.append(f"{where}: google.com/tpu limits {limits} differ from requests {requests}")
        chips_per_host = [whole_chips(v) for v in limits if v is not None]
        if not chips_per_host:
            problems.append(f"{where}: no container has a google.com/tpu limit")
        if any(c is None or c <= 0 for c in chips_per_host):
            problems.append(f"{where}: google.com/tpu limits {limits} are not all non-zero whole numbers")
            continue
        per_host = sum(chips_per_host)
        accelerator, topology = selector.get(catalog.ACCELERATOR_LABEL), selector.get(catalog.TOPOLOGY_LABEL)
        if topology is None:
            problems.append(f"{where}: nodeSelector has no {catalog.TOPOLOGY_LABEL}")
            continue
        gen = generation_of(accelerator)
        if gen is None:
            problems.append(f"{where}: nodeSelector {catalog.ACCELERATOR_LABEL}={accelerator!r} is no known TPU")
            continue
        if not catalog.is_valid_topology(gen, topology):
            problems.append(f"{where}: {topology!r} is not a {gen.name} topology")
            continue
        chips = math.prod(catalog.parse_topology(topology))
        hosts = group.get("numOfHosts", 1)  # the CRD's default
        if per_host and (chips % per_host or hosts != chips // per_host):
            problems.append(f"{where}: numOfHosts is {hosts}, but a {gen.name} {topology} slice ({chips} chips) at "
                            f"{per_host} google.com/tpu per host needs {chips / per_host:g}")
    return problems


def render(values: dict, kind_key: str = "rayClusters", index: int = 0, ctx=CONTEXT) -> dict:
    for tpu_slice in values.get("ray-tpu-gke:tpuSlices", []):
        tpu_slice.setdefault("count", 2)  # room for a RayService's NewCluster upgrade
    config = parse_stack_config(values, "test")
    objects = {"rayClusters": config.ray_clusters, "rayServices": config.ray_services, "rayJobs": config.ray_jobs}
    return manifests.ray_manifest(objects[kind_key][index], config.targets, ctx)


def base_manifest() -> dict:
    return render(minimal_values())


def first_group(manifest: dict) -> dict:
    return cluster_spec(manifest)["workerGroupSpecs"][0]


# --- the committed stacks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("stack", STACKS)
def test_stack_ray_objects_validate_strictly_against_crd(stack, release):
    objects = ray_objects(stack)
    failures = []
    for name, manifest in objects:
        failures += [f"{name} ({manifest['kind']}) {p}" for p in kuberay_schema.errors(manifest, release)]
    assert not failures, f"stack {stack}: invalid against the KubeRay {release} CRDs:\n" + "\n".join(
        f"  {f}" for f in failures)


@pytest.mark.parametrize("stack", STACKS)
def test_every_configured_ray_object_is_checked(stack):
    """The plan has one KubeRay object per configured one, so none escapes the CRD check (e.g. a new type token)."""
    from helpers import config_of

    objects = ray_objects(stack)
    assert len(objects) == len(config_of(stack).ray_objects)
    assert all(m["apiVersion"] == "ray.io/v1" for _, m in objects)


def test_stacks_cover_every_kind():
    kinds = {m["kind"] for stack in STACKS for _, m in ray_objects(stack)}
    assert kinds == set(kuberay_schema.KINDS), f"the committed stacks only exercise {sorted(kinds)}"


@pytest.mark.parametrize("stack", STACKS)
def test_stack_tpu_worker_groups_follow_webhook_rules(stack):
    objects = ray_objects(stack)
    problems = [f"{name}: {p}" for name, m in objects for p in webhook_problems(m)]
    assert not problems, "\n".join(problems)
    groups = [g for _, m in objects for g in cluster_spec(m).get("workerGroupSpecs", []) if is_tpu_group(g)]
    assert groups or not objects, f"stack {stack} has KubeRay objects but no TPU worker group to check"


@pytest.mark.parametrize("stack", STACKS)
def test_stack_metadata_is_plain(stack):
    """The CRD schema leaves metadata open (the API server checks ObjectMeta itself), so check what we set here."""
    for name, manifest in ray_objects(stack):
        metadata = manifest["metadata"]
        assert set(metadata) <= {"name", "namespace", "labels", "annotations"}, (name, sorted(metadata))
        assert isinstance(metadata["name"], str) and isinstance(metadata["namespace"], str), name
        for key in ("labels", "annotations"):
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.get(key, {}).items()), (name, key)


# --- the validator itself can fail ---------------------------------------------------------------------------------


def test_translation_of_kubernetes_extensions():
    import jsonschema

    schema = kuberay_schema.strict({
        "type": "object",
        "properties": {
            "port": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
            "when": {"type": "string", "nullable": True},
            "open": {"type": "object", "properties": {"a": {"type": "string"}},
                     "x-kubernetes-preserve-unknown-fields": True},
            "anything": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    })
    jsonschema.Draft7Validator.check_schema(schema)
    check = jsonschema.Draft7Validator(schema)
    good = {"port": 80, "when": None, "open": {"a": "x", "b": 1}, "anything": {"c": [1]}, "map": {"k": "v"}}
    assert list(check.iter_errors(good)) == []
    assert list(check.iter_errors({**good, "port": "http"})) == []
    for bad in ({"port": 1.5}, {"port": None}, {"when": 3}, {"open": {"a": 1}}, {"map": {"k": 1}}, {"extra": 1}):
        assert list(check.iter_errors({**good, **bad})), bad


def test_vendored_crds_are_unmodified():
    """The copies still match the checksums recorded in SOURCE.md (byte-for-byte copies of the upstream files)."""
    import hashlib
    import re

    recorded = dict((path, digest) for digest, path in re.findall(
        r"^([0-9a-f]{64})  tests/data/kuberay/(\S+)$", (kuberay_schema.DATA / "SOURCE.md").read_text(), re.M))
    expected = {f"{r}/{name}" for r in RELEASES for name in kuberay_schema.FILES.values()}
    assert set(recorded) == expected
    for path, digest in recorded.items():
        assert hashlib.sha256((kuberay_schema.DATA / path).read_bytes()).hexdigest() == digest, path


def test_vendored_crds_load_strictly():
    for release in RELEASES:
        for kind in kuberay_schema.KINDS:
            schema = kuberay_schema.validator(release, kind).schema
            assert schema["additionalProperties"] is False
            assert {"apiVersion", "kind", "metadata", "spec"} <= set(schema["properties"]), (release, kind)


@pytest.mark.parametrize("release", RELEASES)
def test_base_manifest_is_valid(release):
    assert_valid(base_manifest(), release)


@pytest.mark.parametrize("release", RELEASES)
def test_misspelt_field_is_rejected(release):
    manifest = base_manifest()
    group = first_group(manifest)
    group["numOfHost"] = group.pop("numOfHosts")
    problems = kuberay_schema.errors(manifest, release)
    assert any(p.startswith("$.spec.workerGroupSpecs[0].numOfHost: unknown field") for p in problems), problems


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("path, key", [
    (("spec",), "workerGroupSpec"),  # top level of the cluster spec
    (("spec", "headGroupSpec", "template", "spec", "containers", 0), "resource"),  # deep in the pod template
    (("spec", "workerGroupSpecs", 0, "template", "spec"), "nodeSelectors"),
])
def test_unknown_field_anywhere_is_rejected(release, path, key):
    manifest = base_manifest()
    node = manifest
    for part in path:
        node = node[part]
    node[key] = {}
    expected = kuberay_schema.json_path([*path, key]) + ": unknown field"
    problems = kuberay_schema.errors(manifest, release)
    assert any(p.startswith(expected) for p in problems), problems


@pytest.mark.parametrize("release", RELEASES)
def test_string_replicas_is_rejected(release):
    manifest = base_manifest()
    first_group(manifest)["replicas"] = "1"
    problems = kuberay_schema.errors(manifest, release)
    assert any(p.startswith("$.spec.workerGroupSpecs[0].replicas:") for p in problems), problems


@pytest.mark.parametrize("release", RELEASES)
def test_int_or_string_quantities_accept_both_and_reject_others(release):
    manifest = base_manifest()
    resources = first_group(manifest)["template"]["spec"]["containers"][0]["resources"]
    resources["limits"]["google.com/tpu"] = 4
    resources["requests"]["cpu"] = "1500m"
    assert_valid(manifest, release)
    resources["limits"]["memory"] = ["16Gi"]
    resources["requests"]["cpu"] = "1.5 cores"
    problems = kuberay_schema.errors(manifest, release)
    limits = "$.spec.workerGroupSpecs[0].template.spec.containers[0].resources"
    assert any(p.startswith(f"{limits}.limits.memory:") for p in problems), problems
    assert any(p.startswith(f"{limits}.requests.cpu:") for p in problems), problems


def test_releases_differ_a_newer_field_fails_the_older_crd():
    """Worker-group `resources` exists only from KubeRay 1.4 on: checking both releases is not redundant."""
    manifest = base_manifest()
    first_group(manifest)["resources"] = {"TPU": "4"}
    assert_valid(manifest, "v1.7.0")
    problems = kuberay_schema.errors(manifest, "v1.3.2")
    assert any(p.startswith("$.spec.workerGroupSpecs[0].resources: unknown field") for p in problems), problems


def test_wrong_kind_is_reported():
    manifest = base_manifest()
    manifest["kind"] = "RayClusters"
    assert kuberay_schema.errors(manifest, "v1.7.0")


@pytest.mark.parametrize("release", RELEASES)
def test_every_error_is_reported_with_its_path(release):
    manifest = base_manifest()
    first_group(manifest)["replicas"] = "1"
    first_group(manifest)["numOfHost"] = 1
    manifest["spec"]["rayVersion"] = 2
    paths = {p.split(":")[0] for p in kuberay_schema.errors(manifest, release)}
    assert {"$.spec.workerGroupSpecs[0].replicas", "$.spec.workerGroupSpecs[0].numOfHost",
            "$.spec.rayVersion"} <= paths


# --- the webhook rules can fail ------------------------------------------------------------------------------------


def multi_host_manifest() -> dict:
    values = minimal_values(
        tpuSlices=[{"name": "v6e-16", "generation": "v6e", "topology": "4x4"}],
        rayClusters=[{"name": "train", "workerGroups": [{"name": "tpu", "slice": "v6e-16", "replicas": 1}]}],
    )
    manifest = render(values)
    assert first_group(manifest)["numOfHosts"] == 4
    return manifest


def tpu_container(manifest: dict) -> dict:
    return first_group(manifest)["template"]["spec"]["containers"][0]


def test_webhook_rules_pass_for_a_multi_host_slice():
    assert webhook_problems(multi_host_manifest()) == []


@pytest.mark.parametrize("breakage, message", [
    (lambda m: first_group(m).__setitem__("numOfHosts", 1), "numOfHosts is 1"),
    (lambda m: first_group(m).pop("numOfHosts"), "numOfHosts is 1"),
    (lambda m: first_group(m)["template"]["spec"]["nodeSelector"].pop(catalog.TOPOLOGY_LABEL), "has no"),
    (lambda m: first_group(m)["template"]["spec"]["nodeSelector"].__setitem__(catalog.TOPOLOGY_LABEL, "8x8"),
     "numOfHosts is 4"),
    (lambda m: first_group(m)["template"]["spec"]["nodeSelector"].__setitem__(catalog.TOPOLOGY_LABEL, "3x3"),
     "not a v6e topology"),
    (lambda m: first_group(m)["template"]["spec"]["nodeSelector"].__setitem__(catalog.ACCELERATOR_LABEL, "tpu-v9"),
     "no known TPU"),
    (lambda m: tpu_container(m)["resources"]["limits"].__setitem__(catalog.TPU_RESOURCE, "0"), "non-zero whole"),
    (lambda m: [tpu_container(m)["resources"][w].__setitem__(catalog.TPU_RESOURCE, "2.5")
                for w in ("limits", "requests")], "non-zero whole"),
    (lambda m: tpu_container(m)["resources"]["requests"].__setitem__(catalog.TPU_RESOURCE, "2"), "differ"),
    (lambda m: [tpu_container(m)["resources"][w].pop(catalog.TPU_RESOURCE) for w in ("limits", "requests")],
     "no container has a google.com/tpu limit"),
    (lambda m: first_group(m)["rayStartParams"].__setitem__("num-cpus", 8), "not a string"),
    (lambda m: first_group(m)["rayStartParams"].__setitem__("resources", '"{\\"TPU\\": 4}"'), "declares TPU"),
])
def test_webhook_rules_catch(breakage, message):
    manifest = multi_host_manifest()
    breakage(manifest)
    problems = webhook_problems(manifest)
    assert any(message in p for p in problems), problems


# --- manifests built from small configs: Autopilot, RayService, RayJob -------------------------------------------


AUTOPILOT_SLICES = [
    {"name": "v6e-4-spot", "generation": "v6e", "topology": "2x2", "capacity": "spot", "zone": "us-east5-b"},
    {"name": "v6e-16-flex", "generation": "v6e", "topology": "4x4", "capacity": "flexStart"},
    {"name": "v5p-32-res", "generation": "v5p", "topology": "2x4x4", "capacity": "reservation",
     "reservation": "train-v5p"},
    {"name": "v5e-8", "generation": "v5e", "topology": "2x4"},
]
AUTOPILOT_GROUPS = [{"name": s["name"], "slice": s["name"], "replicas": 1, "minReplicas": 0, "maxReplicas": 2}
                    for s in AUTOPILOT_SLICES]


def autopilot_values(**overrides) -> dict:
    return minimal_values(
        cluster={"name": "ray-tpu", "mode": "autopilot", "location": "us-east5", "deletionProtection": False},
        tpuSlices=AUTOPILOT_SLICES,
        rayClusters=[{"name": "train", "autoscaling": {"enabled": True}, "workerGroups": AUTOPILOT_GROUPS}],
        **overrides,
    )


def test_autopilot_manifest_is_autopilot():
    """The Autopilot case really differs from Standard: no node pool selectors, capacity spelt out per slice."""
    groups = cluster_spec(render(autopilot_values()))["workerGroupSpecs"]
    selectors = [g["template"]["spec"]["nodeSelector"] for g in groups]
    assert len(groups) == len(AUTOPILOT_SLICES)
    assert not any(manifests.SLICE_LABEL in s or "cloud.google.com/gke-nodepool" in s for s in selectors)
    assert selectors[0].get("cloud.google.com/gke-spot") == "true"
    assert [g["numOfHosts"] for g in groups] == [1, 4, 8, 1]


@pytest.mark.parametrize("release", RELEASES)
def test_autopilot_ray_cluster_validates(release):
    manifest = render(autopilot_values())
    assert_valid(manifest, release, "autopilot RayCluster")
    assert webhook_problems(manifest) == []


SERVE_CONFIG = {"applications": [{"name": "app", "import_path": "serve_app:app", "route_prefix": "/",
                                  "deployments": [{"name": "Model", "num_replicas": 1}]}]}
JOB = {"name": "job", "entrypoint": "python train.py", "workerGroups": [{"name": "tpu", "slice": "v6e-4"}]}


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("ctx", [CONTEXT, manifests.RenderContext(standard=True, service_account="ray")],
                         ids=["autopilot", "standard"])
@pytest.mark.parametrize("kind_key, items", [
    ("rayServices", [{"name": "serve", "serveConfig": SERVE_CONFIG,
                      "workerGroups": [{"name": "tpu", "slice": "v6e-4"}]}]),
    ("rayServices", [{"name": "serve", "serveConfig": SERVE_CONFIG, "upgradeStrategy": "None", "waitForReady": True,
                      "gcsFuse": False, "workerGroups": [{"name": "tpu", "slice": "v6e-4"}]}]),
    ("rayJobs", [JOB]),
    ("rayJobs", [{**JOB, "runtimeEnv": {"pip": ["jax[tpu]"], "env_vars": {"A": "1"}}, "ttlSecondsAfterFinished": 60,
                  "activeDeadlineSeconds": 3600, "submissionMode": "HTTPMode", "waitForReady": True}]),
], ids=["service", "service-options", "job", "job-options"])
def test_ray_service_and_job_validate(kind_key, items, ctx, release):
    values = minimal_values(rayClusters=[], **{kind_key: items})
    manifest = render(values, kind_key, ctx=ctx)
    assert manifest["kind"] == manifests.KINDS[kind_key]
    assert_valid(manifest, release)
    assert webhook_problems(manifest) == []


@pytest.mark.parametrize("release", RELEASES)
def test_ray_job_misspelt_field_is_rejected(release):
    manifest = render(minimal_values(rayClusters=[], rayJobs=[JOB]), "rayJobs")
    manifest["spec"]["entryPoint"] = manifest["spec"].pop("entrypoint")
    problems = kuberay_schema.errors(manifest, release)
    assert any(p.startswith("$.spec.entryPoint: unknown field") for p in problems), problems


@pytest.mark.parametrize("release", RELEASES)
def test_ray_service_nested_cluster_spec_is_strict(release):
    manifest = render(minimal_values(rayClusters=[], rayServices=[
        {"name": "serve", "serveConfig": SERVE_CONFIG, "workerGroups": [{"name": "tpu", "slice": "v6e-4"}]}]),
        "rayServices")
    bad = copy.deepcopy(manifest)
    first_group(bad)["replicas"] = "2"
    problems = kuberay_schema.errors(bad, release)
    assert any(p.startswith("$.spec.rayClusterConfig.workerGroupSpecs[0].replicas:") for p in problems), problems
