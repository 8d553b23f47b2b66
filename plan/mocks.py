"""Mock provider answers: each resource echoes its inputs plus the outputs the engine would compute and the program
reads (ids, emails, endpoints). Values are fixed, so a plan is byte-for-byte repeatable."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any, Optional

from pulumi.runtime import mocks as pulumi_mocks
from ray_tpu_gke import admission, inputfile
from ray_tpu_gke.catalog import resource_types

MOCK_CA = base64.b64encode(b"mock-cluster-ca").decode()


class PlanMocks(pulumi_mocks.Mocks):
    def __init__(self, project: str, quotas: Optional[list[dict]] = None, quotas_source: str = ""):
        self.project = project
        self.quotas = quotas  # the user's QuotaInfos (`--quotas FILE`), None: the project's quota is not known
        self.quotas_source = quotas_source
        self.notes: list[str] = []  # what the offline plan answered without the project's data, for the plan to say

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def new_resource(self, args: pulumi_mocks.MockResourceArgs):
        inputs = dict(args.inputs)
        name = inputs.get("name", args.name)
        project = inputs.get("project", self.project)
        typ = args.typ
        if typ == "gcp:serviceaccount/account:Account":
            email = f"{inputs['accountId']}@{project}.iam.gserviceaccount.com"
            inputs.update(email=email, name=f"projects/{project}/serviceAccounts/{email}")
            return inputs["name"], inputs
        if typ == resource_types.CLUSTER:
            inputs.update(endpoint="192.0.2.10", masterAuth={"clusterCaCertificate": MOCK_CA})
            return f"projects/{project}/locations/{inputs.get('location')}/clusters/{name}", inputs
        if typ == "gcp:compute/network:Network":
            return f"projects/{project}/global/networks/{name}", inputs
        if typ == "gcp:compute/subnetwork:Subnetwork":
            return f"projects/{project}/regions/{inputs.get('region')}/subnetworks/{name}", inputs
        if typ.startswith("kubernetes:") and "metadata" in inputs:
            return f"{inputs['metadata'].get('namespace', '')}/{inputs['metadata'].get('name', name)}", inputs
        return f"{name}-id", inputs

    def call(self, args: pulumi_mocks.MockCallArgs):
        if args.token == "gcp:container/getEngineVersions:getEngineVersions":
            self._note(VERSIONS_NOTE)
            return engine_versions((args.args or {}).get("versionPrefix") or "")
        if args.token == "gcp:cloudquota/getSQuotaInfos:getSQuotaInfos":
            if self.quotas is not None:
                self._note(
                    f"accelerator quota: checked against {self.quotas_source or 'the given quotas'} "
                    f"({len(self.quotas)} QuotaInfos)"
                )
                # Only the QuotaInfos the check can read (an ID of a TPU or GPU need): a project lists thousands,
                # and each one the invoke returns becomes a tree of Outputs in the Pulumi SDK (20,000 took minutes).
                known = set(quota_ids())
                return {"quotaInfos": [_as_invoke_result(i) for i in self.quotas if i.get("quotaId") in known]}
            if MOCK_TPU_QUOTA is None:
                self._note(QUOTA_NOTE)
            return {"quotaInfos": _unchecked_quota_infos()}
        return {}


# --- GKE versions --------------------------------------------------------------------------------------------------

# The offline answer of `get_engine_versions`, per release channel: its default and its valid versions, newest first
# (GKE API ServerConfig.channels[].defaultVersion / validVersions). Defaults from the GKE release notes of 2026-09
# (1.35.8-gke.1225000 the default of new clusters, 1.34.11-gke.1209000 on Stable); beside them every exact version of
# minors 1.32-1.35 that the catalogue, the admission rules and the docs name (the minimums of a generation, a GPU,
# flex-start, and the docs' example pin 1.34.1-gke.3084001), so no offline plan refuses a version the repository
# itself quotes. Older minors (1.31 and before, with the minimums of v6e and H200 in them) are in no channel of this
# snapshot, as a current GKE offers none of them. The deploy-time check reads the real lists.
ENGINE_VERSIONS_SNAPSHOT = "GKE versions snapshot 2026-09 (GKE release notes; plan/mocks.py ENGINE_VERSIONS)"
ENGINE_VERSIONS_AS_OF = "2026-09"
_NAMED = (
    "1.35.8-gke.1225000",
    "1.34.11-gke.1209000",
    "1.34.1-gke.3084001",
    "1.34.0-gke.2201000",
    "1.33.0-gke.1712000",
    "1.32.2-gke.1652000",
    "1.32.2-gke.1422000",
    "1.32.1-gke.1729000",
)
ENGINE_VERSIONS: dict[str, Any] = {
    "releaseChannelDefaultVersion": {
        "RAPID": "1.35.8-gke.1225000",
        "REGULAR": "1.35.8-gke.1225000",
        "STABLE": "1.34.11-gke.1209000",
    },
    "channelValidVersions": {
        "RAPID": list(_NAMED),
        "REGULAR": list(_NAMED),
        "STABLE": [v for v in _NAMED if not v.startswith("1.35.")],
    },
    "defaultClusterVersion": "1.35.8-gke.1225000",
}
VERSIONS_NOTE = f"GKE versions: offline, from the {ENGINE_VERSIONS_SNAPSHOT}, as of {ENGINE_VERSIONS_AS_OF}"


def engine_versions(prefix: str = "") -> dict[str, Any]:
    """`get_engine_versions` as the provider computes it from the snapshot: valid versions and each channel's latest
    filtered by `prefix`, channel defaults not (terraform-provider-google
    data_source_google_container_engine_versions.go)."""
    snapshot = ENGINE_VERSIONS
    channels = snapshot["channelValidVersions"]
    union = sorted({v for versions in channels.values() for v in versions}, key=admission.version_key, reverse=True)
    valid = [v for v in union if v.startswith(prefix)]
    latest = {
        ch: next(v for v in versions if v.startswith(prefix))
        for ch, versions in channels.items()
        if any(v.startswith(prefix) for v in versions)
    }
    out = {
        "id": ENGINE_VERSIONS_SNAPSHOT,
        "versionPrefix": prefix or None,
        "releaseChannelDefaultVersion": dict(snapshot["releaseChannelDefaultVersion"]),
        "releaseChannelLatestVersion": latest,
        "validMasterVersions": valid,
        "validNodeVersions": valid,
        "defaultClusterVersion": snapshot["defaultClusterVersion"],
    }
    if valid:
        out["latestMasterVersion"] = out["latestNodeVersion"] = valid[0]
    return {k: v for k, v in out.items() if v is not None}


# --- quota ---------------------------------------------------------------------------------------------------------

# Offline, without the user's quotas, nothing is known about the project: every quota ID the library knows is
# answered as not limiting (-1, unlimited: Cloud Quotas v1 QuotaConfig.preferred_value), so the check shows no
# number nobody read, and the plan says the check runs at deploy time (QUOTA_NOTE). Tests may set MOCK_TPU_QUOTA to
# grant that many in every region instead.
MOCK_TPU_QUOTA: Optional[int] = None
MOCK_QUOTA_IDS = tuple(
    (q.quota_id, q.dimensions)
    for table in (admission.TPU_QUOTA_IDS, admission.GPU_QUOTA_IDS)
    for pair in table.values()
    for q in pair
    if q
)
QUOTA_NOTE = (
    "accelerator quota: not checked offline (the project's quota is not known here); `pulumi up` checks it "
    "before any node pool is created; `--quotas FILE` (the JSON of `gcloud beta quotas info list "
    "--service=compute.googleapis.com --project=P --format=json`) checks it now"
)


def quota_ids() -> list[str]:
    """Every Cloud Quotas ID a TPU slice or GPU pool of the library can draw on (admission's tables)."""
    return sorted({quota_id for quota_id, _ in MOCK_QUOTA_IDS})


def _unchecked_quota_infos() -> list[dict]:
    value = "-1" if MOCK_TPU_QUOTA is None else str(MOCK_TPU_QUOTA)
    return [
        {
            "quotaId": quota_id,
            "dimensionsInfos": [{"dimensions": {}, "details": [{"value": value}], "applicableLocations": ["global"]}],
        }
        for quota_id in quota_ids()
    ]


def _as_invoke_result(info: dict) -> dict:
    """The fields of a QuotaInfo of the REST/gcloud JSON that the quota check reads (load_quotas checked them), as
    pulumi-gcp's invoke result holds them: `details` a one-element list. Its other fields stay out: pulumi-gcp types
    every field of the result, and a file's other fields (its name, metric, dimensions list) are not checked."""
    return {
        "quotaId": info["quotaId"],
        "dimensionsInfos": [
            {
                "dimensions": entry.get("dimensions", {}),
                "details": [entry.get("details") or {}],
                "applicableLocations": entry.get("applicableLocations", []),
            }
            for entry in info.get("dimensionsInfos") or []
        ],
    }


class QuotasFileError(ValueError):
    """The `--quotas` file is not a list of Cloud Quotas QuotaInfo documents."""


_INT64 = re.compile(r"-?[0-9]{1,19}")  # proto3 JSON writes an int64 as a decimal string


def _dimensions_info(entry: Any) -> bool:
    """A DimensionsInfo the quota check can read (Cloud Quotas v1: dimensions map<string, string>, details.value
    int64, applicable_locations repeated string)."""
    if not isinstance(entry, dict):
        return False
    dimensions, details = entry.get("dimensions", {}), entry.get("details") or {}
    locations = entry.get("applicableLocations", [])
    return (
        isinstance(dimensions, dict)
        and all(isinstance(v, str) for v in dimensions.values())
        and isinstance(details, dict)
        and bool(_INT64.fullmatch(str(details.get("value", "0"))))
        and isinstance(locations, list)
        and all(isinstance(location, str) for location in locations)
    )


def load_quotas(path: Path) -> list[dict]:
    """The QuotaInfos of `gcloud beta quotas info list --format=json` (a JSON list), or of the REST `quotaInfos.list`
    response (`{"quotaInfos": [...]}`), checked for the fields the quota check reads (Cloud Quotas v1 QuotaInfo:
    quotaId, dimensionsInfos[].dimensions, details.value, applicableLocations)."""
    try:
        document = inputfile.read_json(path, "--quotas", "a QuotaInfo list")
    except inputfile.InputError as error:
        raise QuotasFileError(str(error)) from None
    infos = document.get("quotaInfos") if isinstance(document, dict) else document
    if not isinstance(infos, list):
        raise QuotasFileError(
            f"--quotas {path}: must be a JSON list of QuotaInfo objects (gcloud beta quotas info "
            'list --format=json) or {"quotaInfos": [...]}'
        )
    for i, info in enumerate(infos):
        entries = info.get("dimensionsInfos", []) if isinstance(info, dict) else None
        if not isinstance(info, dict) or not isinstance(info.get("quotaId"), str) or not isinstance(entries, list):
            raise QuotasFileError(f"--quotas {path}: [{i}] is not a QuotaInfo (quotaId, dimensionsInfos)")
        for j, entry in enumerate(entries):
            if not _dimensions_info(entry):
                shown = json.dumps(entry)
                raise QuotasFileError(
                    f"--quotas {path}: [{i}].dimensionsInfos[{j}] must have dimensions (a map of strings), "
                    "details.value (an int64, as a string) and applicableLocations (a list of strings); given "
                    + (shown if len(shown) <= 120 else shown[:117] + "...")
                )
    return infos
