"""Serving on TPU and GPU, measured (`make compare-serve`, `python -m plan.compare STACK --serve --context CTX`): the
same Ray Serve application on a TPU slice and on a GPU pool under open-loop traffic (`patterns`, `load`), Serve's own
state read while it runs (`serve_state`), and one report for local and live runs (`report`, `markdown`, `charts`)."""
