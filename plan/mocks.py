"""Mock provider answers: each resource echoes its inputs plus the outputs the engine would compute and the program
reads (ids, emails, endpoints). Values are fixed, so a plan is byte-for-byte repeatable."""

from __future__ import annotations

import base64

from pulumi.runtime import mocks as pulumi_mocks

from ray_tpu_gke import admission

MOCK_CA = base64.b64encode(b"mock-cluster-ca").decode()


class PlanMocks(pulumi_mocks.Mocks):
    def __init__(self, project: str):
        self.project = project

    def new_resource(self, args: pulumi_mocks.MockResourceArgs):
        inputs = dict(args.inputs)
        name = inputs.get("name", args.name)
        project = inputs.get("project", self.project)
        typ = args.typ
        if typ == "gcp:serviceaccount/account:Account":
            email = f"{inputs['accountId']}@{project}.iam.gserviceaccount.com"
            inputs.update(email=email, name=f"projects/{project}/serviceAccounts/{email}")
            return inputs["name"], inputs
        if typ == "gcp:container/cluster:Cluster":
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
            return dict(ENGINE_VERSIONS)
        if args.token == "gcp:cloudquota/getSQuotaInfos:getSQuotaInfos":
            return {"quotaInfos": [
                {"quotaId": quota_id, "dimensionsInfos": [
                    {"dimensions": {"region": region, **dict(extra)}, "details": [{"value": str(MOCK_TPU_QUOTA)}],
                     "applicableLocations": [region]} for region in MOCK_REGIONS]}
                for quota_id, extra in MOCK_QUOTA_IDS]}
        return {}


# What GKE answers offline: the versions of the release notes of 2026-09 (1.35.8-gke.1225000 the default for new
# clusters, 1.34.11-gke.1209000 available), so the deploy-time version check runs in every plan.
ENGINE_VERSIONS = {
    "releaseChannelDefaultVersion": {"RAPID": "1.35.8-gke.1225000", "REGULAR": "1.35.8-gke.1225000",
                                     "STABLE": "1.34.11-gke.1209000"},
    "latestMasterVersion": "1.34.11-gke.1209000",
    "validMasterVersions": ["1.35.8-gke.1225000", "1.34.11-gke.1209000"],
    "defaultClusterVersion": "1.35.8-gke.1225000",
}
# A project with ample TPU and GPU quota everywhere the stacks deploy (the deploy-time quota check then passes).
MOCK_TPU_QUOTA = 4096
MOCK_REGIONS = ("us-central1", "us-east5", "us-east1", "us-south1", "us-west4", "europe-west4", "asia-northeast1")
MOCK_QUOTA_IDS = tuple((q.quota_id, q.dimensions) for table in (admission.TPU_QUOTA_IDS, admission.GPU_QUOTA_IDS)
                       for pair in table.values() for q in pair if q)
