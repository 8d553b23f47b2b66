"""#22.9, #22.15: the deploy-time checks as the offline plan runs them: the release channel's versions, a dated
snapshot of them, and the project's quota only where the user gives it."""

from __future__ import annotations

import json

import pytest
from helpers import minimal_values
from quota_infos import INFOS

from plan import __main__ as plan_main
from plan import harness, mocks
from ray_tpu_gke import catalog
from ray_tpu_gke.resources.preflight import PreflightError, channel_version, version_prefix


def plan(values, **kwargs) -> harness.Plan:
    return harness.run_program("test", values, **kwargs)


def pinned(pin: str, channel: str = "REGULAR", **overrides) -> dict:
    values = minimal_values(**overrides)
    values["ray-tpu-gke:cluster"].update(minMasterVersion=pin, releaseChannel=channel)
    return values


# --- the release channel decides (#22.9) ---------------------------------------------------------------------------


def test_a_minor_pin_the_channel_does_not_offer_stops_the_deploy():
    # STABLE offers no 1.35 in the snapshot, though RAPID and REGULAR do: the newest 1.35 of any channel is no answer.
    with pytest.raises(PreflightError, match=r"minMasterVersion 1.35: GKE's STABLE channel in us-east5-b offers no "
                                             r"1.35 version \(its default is 1.34.11-gke.1209000\)"):
        plan(pinned("1.35", "STABLE"))
    assert plan(pinned("1.35", "REGULAR")).steps


def test_an_exact_pin_outside_the_channel_stops_the_deploy():
    with pytest.raises(PreflightError, match=r"minMasterVersion 1.35.8-gke.1225000 is not a version of GKE's STABLE "
                                             r"channel in us-east5-b"):
        plan(pinned("1.35.8-gke.1225000", "STABLE"))


def test_the_ironwood_minimum_the_catalogue_quotes_can_be_pinned():
    minimum = catalog.generation("tpu7x").min_gke_version
    assert plan(pinned(minimum, "REGULAR")).steps  # the old snapshot refused it as "no longer offered"


def test_a_minor_pin_resolves_to_the_newest_patch_of_that_minor_in_the_channel():
    answer = mocks.engine_versions(version_prefix("1.34"))
    assert answer["releaseChannelLatestVersion"] == {ch: "1.34.11-gke.1209000" for ch in ("RAPID", "REGULAR", "STABLE")}
    assert all(v.startswith("1.34.") for v in answer["validMasterVersions"])
    assert mocks.engine_versions("1.3.")["validMasterVersions"] == []  # 1.3 never matches 1.34
    created = channel_version("us-east5", "REGULAR", "1.34", answer["releaseChannelDefaultVersion"],
                              answer["releaseChannelLatestVersion"], answer["validMasterVersions"])
    assert created == "1.34.11-gke.1209000"


def test_an_older_channel_patch_than_a_need_stops_the_deploy(monkeypatch):
    snapshot = json.loads(json.dumps(mocks.ENGINE_VERSIONS))
    snapshot["channelValidVersions"]["STABLE"] = ["1.34.0-gke.2201000", "1.33.0-gke.1712000"]
    monkeypatch.setattr(mocks, "ENGINE_VERSIONS", snapshot)
    values = pinned("1.33", "STABLE", tpuSlices=[{"name": "f", "generation": "v6e", "topology": "2x2",
                                                  "capacity": "flexStart"}], rayClusters=[])
    assert plan(values).steps  # 1.33.0-gke.1712000 is flex-start's minimum exactly
    snapshot["channelValidVersions"]["STABLE"] = ["1.33.0-gke.1000000"]
    with pytest.raises(PreflightError, match=r"resolves in GKE's STABLE channel in us-east5-b to 1.33.0-gke.1000000, "
                                             r"older than 1.33.0-gke.1712000 that flex-start TPUs needs"):
        plan(values)


def test_the_snapshot_offers_every_version_the_catalogue_and_docs_name_in_its_minors():
    named = {catalog.generation(g).min_gke_version for g in catalog.GENERATIONS}
    named |= {g.min_gke_version for g in catalog.GPUS.values()}
    named |= {g.min_gke_version_autopilot for g in catalog.GPUS.values() if g.min_gke_version_autopilot}
    named |= {"1.34.1-gke.3084001", "1.33.0-gke.1712000", "1.32.2-gke.1652000"}  # README, flex-start, GPU flex-start
    offered = set(mocks.engine_versions()["validMasterVersions"])
    minors = {".".join(v.split(".")[:2]) for v in offered}
    assert minors == {"1.32", "1.33", "1.34", "1.35"}
    assert {v for v in named if ".".join(v.split(".")[:2]) in minors} <= offered
    assert "1.31.2-gke.1115000" not in offered  # an older minor: refused as no longer offered


def test_the_plan_names_the_versions_snapshot_and_its_date(capsys):
    assert plan_main.main(["staging", "--json"]) == 0
    err = capsys.readouterr().err
    assert f"note: {mocks.VERSIONS_NOTE}" in err and mocks.ENGINE_VERSIONS_AS_OF in mocks.VERSIONS_NOTE


# --- quota offline (#22.15) and from the user's file (#22.2) ---------------------------------------------------------


def test_offline_the_quota_is_not_invented():
    # 20 slices of 256 chips: 5,120 TPU chips, more than the 4,096 the old mocks granted everywhere.
    values = minimal_values(tpuSlices=[{"name": "big", "generation": "v6e", "topology": "16x16", "count": 20}],
                            rayClusters=[])
    result = plan(values)
    assert mocks.QUOTA_NOTE in result.notes
    assert not any("4096" in w for w in result.warnings)


def test_the_users_quotas_are_checked_default_bucket_included():
    values = minimal_values()  # 4 v6e chips in us-east5: the CT6E default of the family there is 8
    result = plan(values, quotas=INFOS, quotas_source="quotas.json")
    assert mocks.QUOTA_NOTE not in result.notes and "checked against quotas.json (3 QuotaInfos)" in result.notes[-1]
    values["gcp:region"] = "us-central1"
    values["ray-tpu-gke:cluster"]["location"] = "us-central1-b"
    with pytest.raises(PreflightError, match=r"tpu_family=CT6E in us-central1: the project has 0 TPU chips, the "
                                             r"stack needs 4"):
        plan(values, quotas=INFOS)


def test_the_quotas_option_reads_gcloud_json_and_refuses_what_is_not(tmp_path, capsys):
    listed = tmp_path / "quotas.json"
    listed.write_text(json.dumps(INFOS))
    assert mocks.load_quotas(listed) == INFOS
    wrapped = tmp_path / "rest.json"
    wrapped.write_text(json.dumps({"quotaInfos": INFOS}))
    assert mocks.load_quotas(wrapped) == INFOS
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"quotaId": "X", "dimensionsInfos": [{"dimensions": {}, "details": {"value": "a"}}]}]))
    assert plan_main.main(["staging", "--quotas", str(bad)]) == 2
    assert "[0].dimensionsInfos[0] must have dimensions (a map of strings), details.value" in capsys.readouterr().err


def test_a_quota_infos_fields_the_check_does_not_read_may_be_anything(tmp_path, capsys):
    """A QuotaInfo's other fields (Cloud Quotas v1: name, metric, dimensions, ...) go unread and unchecked: of such a
    field of another type, pulumi-gcp's typed invoke result once made a traceback of the plan."""
    odd = [{**info, "dimensions": "region", "name": {"not": "a string"}, "isPrecise": "yes"} for info in INFOS]
    listed = tmp_path / "quotas.json"
    listed.write_text(json.dumps(odd))
    assert plan_main.main(["dev", "--quotas", str(listed)]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_the_quotas_option_checks_the_offline_plan(tmp_path, capsys):
    listed = tmp_path / "quotas.json"
    listed.write_text(json.dumps(INFOS))  # staging needs 16 CT6E chips in us-east5, which has the family default 8
    assert plan_main.main(["staging", "--quotas", str(listed), "--json"]) == 1
    err = capsys.readouterr().err
    assert "error: deploy-time check failed: quota TPUS-PER-TPU-FAMILY-per-project-region, tpu_family=CT6E in " \
           "us-east5: the project has 8 TPU chips, the stack needs 16" in err
    assert err.rstrip().endswith(f"(quotas from {listed})")
