"""Alert documentation links to the runbook: URLs built from `ray-tpu-gke:monitoring.runbookBaseUrl` (the https base
under which a git host serves the repository's files), each to its section of docs/operations.md; unset, the alerts
name the file and section without inventing an address; a value that is not an https URL is refused by key path."""

from __future__ import annotations

import re

import pytest

from helpers import ALERT_POLICY, ROOT, minimal_values, run, steps_of_type
from ray_tpu_gke.render.alert_docs import runbook_anchor
from ray_tpu_gke.spec.problems import ConfigError

BASE = "https://git.internal.test/ml-platform/ray-tpu-gke/blob/main"  # .test: a name reserved for tests (RFC 2606)


def _contents(values) -> list[str]:
    return [s["newState"]["inputs"]["documentation"]["content"] for s in steps_of_type(run(values), ALERT_POLICY)]


def _runbook_anchors() -> set[str]:
    text = (ROOT / "docs" / "operations.md").read_text()
    return {runbook_anchor(h) for h in re.findall(r"(?m)^#{2,4} (.+)$", text)}


def test_a_base_url_makes_every_runbook_reference_a_link_to_its_section():
    contents = _contents(minimal_values(monitoring={"runbookBaseUrl": BASE + "/"}))
    assert contents
    anchors = _runbook_anchors()
    for content in contents:
        (url,) = re.findall(r"Runbook: \[[^\]]+\]\((\S+)\)\.", content)
        page, _, anchor = url.partition("#")
        assert page == f"{BASE}/docs/operations.md"  # the trailing slash dropped
        assert anchor in anchors, (anchor, sorted(anchors))


def test_without_a_base_url_the_alerts_name_the_file_and_no_address():
    for content in _contents(minimal_values()):
        assert 'Runbook: `docs/operations.md`, section "' in content and "https://" not in content


@pytest.mark.parametrize("value", ["http://git.internal.test/ml/ray-tpu-gke", "git.internal.test/ml", "https://",
                                   "https://<your-git-host>/<org>/ray-tpu-gke/blob/main", "https://h.test/x?ref=1"])
def test_a_base_url_that_is_not_an_https_url_is_refused_by_key_path(value):
    with pytest.raises(ConfigError) as raised:
        run(minimal_values(monitoring={"runbookBaseUrl": value}))
    assert any(p.path == "ray-tpu-gke:monitoring.runbookBaseUrl" and "is not an https URL" in p.message
               for p in raised.value.problems), [str(p) for p in raised.value.problems]
