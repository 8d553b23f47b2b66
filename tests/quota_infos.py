"""A project's Cloud Quotas QuotaInfos as `--quotas FILE` hands them to the plan (library/test_quota.py reads them
with the admission rules, plan/test_preflight.py and plan/test_hostile_flags.py through the command line)."""

# QuotaInfo documents shaped as Cloud Quotas v1 returns them (google/api/cloudquotas/v1/resources.proto QuotaInfo,
# proto3 JSON: int64 `value` as a string, omitted when 0), most specific entries first as the API orders them.
TPU_FAMILY = {
    "name": "projects/123456789/locations/global/services/compute.googleapis.com/quotaInfos/"
            "TPUS-PER-TPU-FAMILY-per-project-region",
    "quotaId": "TPUS-PER-TPU-FAMILY-per-project-region",
    "service": "compute.googleapis.com",
    "isPrecise": True,
    "containerType": "PROJECT",
    "dimensions": ["region", "tpu_family"],
    "dimensionsInfos": [
        {"dimensions": {"region": "europe-west4", "tpu_family": "CT6E"}, "details": {"value": "32"},
         "applicableLocations": ["europe-west4"]},
        {"dimensions": {"region": "us-east5", "tpu_family": "CT5LP"}, "details": {"value": "64"},
         "applicableLocations": ["us-east5"]},
        {"dimensions": {"tpu_family": "CT6E"}, "details": {"value": "8"},
         "applicableLocations": ["us-east1", "us-east5", "europe-west4"]},
        {"dimensions": {}, "details": {},
         "applicableLocations": ["us-central1", "us-east1", "us-east5", "us-south1", "europe-west4"]},
    ],
}
PREEMPTIBLE_V6E = {
    "quotaId": "PREEMPTIBLE-TPU-V6E-per-project-region",
    "dimensions": ["region"],
    "dimensionsInfos": [
        {"dimensions": {"region": "us-east1"}, "details": {"value": "64"}, "applicableLocations": ["us-east1"]},
        {"dimensions": {}, "details": {"value": "-1"}, "applicableLocations": ["us-east1", "us-east5"]},
    ],
}
GPU_FAMILY = {
    "quotaId": "GPUS-PER-GPU-FAMILY-per-project-region",
    "dimensions": ["region", "gpu_family"],
    "dimensionsInfos": [
        {"dimensions": {"region": "us-central1", "gpu_family": "NVIDIA_H100"}, "details": {"value": "16"},
         "applicableLocations": ["us-central1"]},
        {"dimensions": {"gpu_family": "NVIDIA_H200"}, "details": {"value": "16"},
         "applicableLocations": ["us-central1", "us-east4"]},
        {"dimensions": {}, "details": {}, "applicableLocations": ["us-central1", "us-east4", "us-east5"]},
    ],
}
INFOS = [TPU_FAMILY, PREEMPTIBLE_V6E, GPU_FAMILY]
