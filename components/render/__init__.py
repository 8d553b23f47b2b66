"""Pure builders of what gets created, plain data out. No Pulumi.

`manifests` (KubeRay objects and GKE custom resources as dicts), `series` (what is observed and the Cloud Monitoring
series of each target), `dashboards` and `alerts` (their JSON), `pricing` (the cost estimate of a stack).
"""
