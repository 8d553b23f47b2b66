"""Mock provider answers: each resource echoes its inputs plus the outputs the engine would compute and the program
reads (ids, emails, endpoints). Values are fixed, so a plan is byte-for-byte repeatable."""

from __future__ import annotations

import base64

from pulumi.runtime import mocks as pulumi_mocks

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
        return {}
