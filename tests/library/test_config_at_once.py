"""Issue #25.5: one run reports every mistake. The rules across sections (demand, what fits a node, names) run on
whatever of each entry validated, and say nothing more about a key already reported."""

from helpers import minimal_values, problems



def paths(found):
    return [line.split(": ", 1)[0] for line in found]


def six_mistakes():
    """Schema (a bad release channel, a bad topology), a namespace of Kubernetes itself, an unknown slice, more
    slices asked for than provisioned, and a head too big for its system node: all in one stack."""
    values = minimal_values(
        tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2"},
                   {"name": "odd", "generation": "v6e", "topology": "3x3"}],
        rayClusters=[{"name": "train", "namespace": "kube-system", "head": {"cpu": "64"},
                      "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 3}]}],
        rayJobs=[{"name": "job", "entrypoint": "python x.py", "workerGroups": [{"name": "w", "slice": "nope"}]}],
    )
    values["ray-tpu-gke:cluster"]["releaseChannel"] = "FAST"
    return values


def test_a_stack_with_six_mistakes_reports_all_six_in_one_run():
    found = problems(six_mistakes())
    assert sorted(paths(found)) == sorted([
        "ray-tpu-gke:cluster.releaseChannel",  # schema
        "ray-tpu-gke:tpuSlices[1].topology",  # catalogue
        "ray-tpu-gke:rayClusters[0].namespace",  # namespaces
        "ray-tpu-gke:rayJobs[0].workerGroups[0].slice",  # names
        "ray-tpu-gke:tpuSlices[0].count",  # demand, although the RayCluster's namespace is bad
        "ray-tpu-gke:rayClusters[0].head",  # fit, although the cluster block and the RayCluster are bad
    ]), found
    (demand,) = [p for p in found if p.startswith("ray-tpu-gke:tpuSlices[0].count")]
    assert "ask for 3 at once (train group tpu: 3)" in demand  # not the default namespace put in its place
    (fit,) = [p for p in found if p.startswith("ray-tpu-gke:rayClusters[0].head")]
    assert "e2-standard-8" in fit


def test_a_key_left_out_says_nothing_more_about_itself():
    values = minimal_values(tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2", "count": -1}])
    values["ray-tpu-gke:rayClusters"][0]["workerGroups"][0]["replicas"] = 2
    # count -1 is reported once; the demand rule, which would read the default count 1, stays quiet about it.
    assert paths(problems(values)) == ["ray-tpu-gke:tpuSlices[0].count"]


def test_a_system_pool_machine_left_out_is_not_used_for_the_head_fit():
    values = minimal_values()
    values["ray-tpu-gke:cluster"]["systemPool"] = {"machineType": "n2-standard-33"}
    values["ray-tpu-gke:rayClusters"][0]["head"] = {"cpu": "30"}
    # the default e2-standard-8 is not what the user meant: no head-fit line against it
    assert paths(problems(values)) == ["ray-tpu-gke:cluster.systemPool.machineType"]


def test_a_bad_mode_does_not_turn_on_the_rules_of_another_mode():
    values = minimal_values()
    values["ray-tpu-gke:cluster"].update(mode="autopilt", location="us-east5")
    # Standard's "a regional cluster's slice needs a zone" would be wrong for the Autopilot the user meant.
    assert paths(problems(values)) == ["ray-tpu-gke:cluster.mode"]


def test_a_job_whose_cluster_key_failed_is_not_judged_on_its_workers():
    values = minimal_values(rayJobs=[{"name": "job", "entrypoint": "python x.py", "cluster": "Train"}])
    assert paths(problems(values)) == ["ray-tpu-gke:rayJobs[0].cluster"]


def test_an_entry_that_failed_on_a_key_other_rules_hinge_on_is_not_judged_on_its_default():
    values = minimal_values(tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2",
                                        "capacity": "reserved", "reservation": "my-res"}])
    # capacity's default onDemand would make the reservation "only allowed with capacity reservation"
    assert paths(problems(values)) == ["ray-tpu-gke:tpuSlices[0].capacity"]


def test_the_plan_reports_all_six_before_any_resource(plan, tmp_path):
    import yaml

    stack = tmp_path / "Pulumi.six.yaml"
    stack.write_text(yaml.safe_dump({"config": six_mistakes()}))
    result = plan("dev", "--config-file", str(stack))
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert len(result.stderr.splitlines()) == 6, result.stderr
