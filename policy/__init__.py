"""The ray-tpu-gke policy pack: organisation rules over what is about to be deployed.

The rules (`policy.rules`) are pure functions over a neutral resource view (`policy.view`), asking the TPU
catalogue for every number. They run in two places:

- `pulumi preview --policy-pack policy`: `__main__.py` serves them to the Pulumi CLI as a pulumi_policy PolicyPack
  (`policy.pack`).
- Offline: `python -m plan STACK --policy-pack policy`, or `python -m policy PLAN.json` over a saved plan
  (`policy.engine`).
"""
