"""The LLM comparison (`python -m plan.compare STACK --llm`): the stack's Ray Serve LLM services, or endpoints of the
user's own, measured in tokens with the same prompts and load (stream.py, metrics.py, shapes.py), locally on a stand-in
engine (local.py), live from a Job in the cluster (live.py, job.py), reported as report.json's `llm` section."""
