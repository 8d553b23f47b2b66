# Two commands for a fresh machine with python3 and make: `make plan` and `make test`.
# PYTHON, VENV and CHECKOV_VENV may be overridden, e.g. `make plan PYTHON=/usr/bin/python3 VENV=.venv-system-python`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-installed
# `python -m plan` from any directory: a .pth file in the venv lists this checkout (written once, see below).
ON_PATH := $(VENV)/.checkout-on-path
STACK ?= dev
# Checkov (tests/plan/test_cis.py) cannot share .venv: it pins packaging<24, which pulumi and pytest exclude.
CHECKOV_VENV ?= .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.requirements-installed
# pip's network patience, unless the environment sets its own: a read that stalls for pip's default 15 s, five
# times, fails the whole install (the workloads venv alone is 1.3 GB installed).
export PIP_DEFAULT_TIMEOUT ?= 120
export PIP_RETRIES ?= 10

# The supported Pythons are pyproject.toml's requires-python, stated nowhere else. Checked before a venv is created;
# plain re and tuples, so that even an old python3 prints this one line instead of a traceback.
define CHECK_PYTHON
import re, sys
spec = re.search(r'(?m)^requires-python\s*=\s*["\']([^"\']*)', open(sys.argv[1]).read()).group(1)
have = sys.version_info[:3]
def ok(clause):
    op, want, star = re.match(r'\s*(~=|==|!=|<=|>=|<|>)\s*([0-9.]*[0-9])(\.\*)?\s*$$', clause).groups()
    want = tuple(int(x) for x in want.split('.'))
    if star or op == '~=':
        prefix = want[:-1] if op == '~=' else want
        same = have[:len(prefix)] == prefix
        return (same and have >= want) if op == '~=' else (same == (op == '=='))
    want = (want + (0, 0))[:3]
    return {'==': have == want, '!=': have != want, '<': have < want, '<=': have <= want,
            '>': have > want, '>=': have >= want}[op]
if not all(ok(c) for c in spec.split(',') if c.strip()):
    sys.stderr.write('%s is Python %s; this project needs Python %s (pyproject.toml requires-python): run make '
                     'with PYTHON=/path/to/a/supported/python3\n' % (sys.argv[2], '.'.join(map(str, have)), spec))
    sys.exit(1)
endef
export CHECK_PYTHON
GUARD = @$(PYTHON) -c "$$CHECK_PYTHON" pyproject.toml '$(PYTHON)'

.PHONY: plan test test-ray test-all test-quick test-tools policy snapshots generate bench clean check-python lint \
	format-check

# Fails, with one line on stderr, when $(PYTHON) is outside pyproject.toml's requires-python.
check-python:
	$(GUARD)

# (Re)build the virtualenv whenever requirements.txt is newer than the last install. The venv ignores itself in git.
$(STAMP): requirements.txt pyproject.toml
	$(GUARD)
	$(PYTHON) -m venv $(VENV)
	@echo '*' > $(VENV)/.gitignore
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

# The checkout's root goes after site-packages on sys.path, so `python -m plan` works from any directory while a
# current directory or PYTHONPATH still comes first (--diff-against plans a git worktree with cwd = the worktree).
$(ON_PATH): $(STAMP)
	echo '$(CURDIR)' > "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/ray-tpu-gke-checkout.pth"
	touch $@

$(CHECKOV_STAMP): requirements-checkov.txt
	$(GUARD)
	$(PYTHON) -m venv $(CHECKOV_VENV)
	@echo '*' > $(CHECKOV_VENV)/.gitignore
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	touch $@

# Ray 2.60 and JAX for workloads/ (tests/workloads/test_workloads_*.py run them in a subprocess): a virtualenv of
# their own, since Ray's dependency ranges are not pulumi's exact pins. WORKLOADS_VENV may be overridden like VENV.
WORKLOADS_VENV ?= .venv-workloads
WORKLOADS_STAMP := $(WORKLOADS_VENV)/.requirements-installed

# Both Ray venvs start every process with workloads/venv_sitecustomize.py (the cyclic collector's thresholds).
SITECUSTOMIZE = cp workloads/venv_sitecustomize.py \
	"$$($(1)/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/sitecustomize.py"

# This checkout's library goes in editable and without its dependencies (Pulumi's pins are not Ray's): the jobs import
# ray_tpu_gke.bench from it, which needs nothing beyond Python (components/bench/).
$(WORKLOADS_STAMP): requirements-workloads.txt pyproject.toml workloads/venv_sitecustomize.py
	$(GUARD)
	$(PYTHON) -m venv $(WORKLOADS_VENV)
	@echo '*' > $(WORKLOADS_VENV)/.gitignore
	$(WORKLOADS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-workloads.txt
	$(WORKLOADS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	$(call SITECUSTOMIZE,$(WORKLOADS_VENV))
	touch $@

# PyTorch beside the workloads' Ray and JAX, for the TPU side's PyTorch route (torchax; docs/compare.md, "PyTorch on
# the TPU side"): a virtualenv of its own, so .venv-workloads stays as the images' JAX side has it. PyPI's torch for
# Linux x86_64 is a CUDA build (about 4.8 GB with its NVIDIA wheels, run here on the CPU), the one image-free way to
# the torch 2.12 that torchax 0.0.13 needs (requirements-torch.txt). TORCH_VENV may be overridden like VENV.
TORCH_VENV ?= .venv-torch
TORCH_STAMP := $(TORCH_VENV)/.requirements-installed

$(TORCH_STAMP): requirements-torch.txt requirements-workloads.txt pyproject.toml workloads/venv_sitecustomize.py
	$(GUARD)
	$(PYTHON) -m venv $(TORCH_VENV)
	@echo '*' > $(TORCH_VENV)/.gitignore
	$(TORCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-torch.txt
	$(TORCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	$(call SITECUSTOMIZE,$(TORCH_VENV))
	touch $@

.PHONY: torch-venv
torch-venv: $(TORCH_STAMP)

# Every virtualenv of the two lanes; .ci/run builds them side by side (`make -j4 venvs`) before the lanes: from pip's
# cache each is mostly unpacking wheels, which one install alone leaves a core idle doing.
.PHONY: venvs
venvs: $(STAMP) $(ON_PATH) $(CHECKOV_STAMP) $(WORKLOADS_STAMP) $(TORCH_STAMP)

plan: $(STAMP) $(ON_PATH)
	$(BIN)/python -m plan $(STACK)

# The tools the tests run beside the project's venv (Checkov; Ray and JAX; the same with PyTorch); the tests that need them
# name this target.
test-tools: $(CHECKOV_STAMP) $(WORKLOADS_STAMP) $(TORCH_STAMP)

# Two lanes. `make test`, the one to run after every change: lint, then every test that needs no local Ray cluster
# (Pulumi mocks, pure layers, the CLIs, snapshots, Checkov, the wheel), on one pytest-xdist worker per CPU. --dist
# loadfile sends each test module to one worker, so that a module-scoped set-up (one Checkov run, one git repository,
# one wheel) is made once; --no-loadscope-reorder keeps the collection's order, the longest modules first
# (tests/conftest.py LONGEST_FIRST), where xdist would sort modules by their number of tests.
# `make test-ray`: the scenarios that start a local Ray cluster (marker local_ray: training with recovery, multislice,
# the Ray smoke checks, the comparison rehearsals, the wheel's `compare --local`), three modules at a time, each on a
# cluster of its own (workloads/local_cluster.py: its own GCS, named in $RAY_ADDRESS of its every process): the serving
# rehearsals wait on Serve's delays, and a third module uses the cores meanwhile (on two cores, three at a time is
# faster than two or four: docs/benchmarks.md, "Test lanes"). `make test-all` runs both; CI runs it (.ci/run).
# Not loadgroup: pytest-xdist 3.8.0 groups by a suffix it writes to item._nodeid (xdist/remote.py), which pytest 9.2
# no longer reads (Node.nodeid is str(self._id), _pytest/nodes.py), so its groups are silently ignored.
# PYTEST_ARGS="-n 0" runs the unit lane in one process, RAY_PYTEST_ARGS="-n 0" the Ray lane one module at a time.
PYTEST_ARGS ?= -n auto --dist loadfile --no-loadscope-reorder
RAY_PYTEST_ARGS ?= -n 3 --dist loadfile --no-loadscope-reorder
# `make test STACK=name`: only that stack's tests (those parametrized with it) and those across every stack
# (tests/conftest.py --stack), as a new environment's checklist runs them; STACK from the command line only, so that
# `make test` alone runs everything whatever `make plan`'s default stack is.
STACK_ARGS := $(if $(filter command line,$(origin STACK)),--stack $(STACK))
TOOLS_ENV = CHECKOV=$(abspath $(CHECKOV_VENV))/bin/checkov WORKLOADS_PYTHON=$(abspath $(WORKLOADS_VENV))/bin/python \
	TORCH_PYTHON=$(abspath $(TORCH_VENV))/bin/python
test: $(STAMP) $(ON_PATH) $(CHECKOV_STAMP) $(WORKLOADS_STAMP) lint
	$(TOOLS_ENV) $(BIN)/python -m pytest -q $(PYTEST_ARGS) -m "not local_ray" $(STACK_ARGS)

# The modules that mark tests local_ray (tests/project/test_suite_order.py checks that each module starting a cluster
# does): the Ray lane collects these alone, not the whole suite it would deselect (3.5 CPU-s in each pytest process).
RAY_MODULES = $(sort $(shell grep -rlE --include='test_*.py' '^[[:space:]]*(pytestmark = .*|@)pytest\.mark\.local_ray' tests))
test-ray: $(STAMP) $(ON_PATH) $(WORKLOADS_STAMP) $(TORCH_STAMP)
	$(TOOLS_ENV) $(BIN)/python -m pytest -q $(RAY_PYTEST_ARGS) -m local_ray $(STACK_ARGS) $(RAY_MODULES)

test-all: test test-ray

# ruff's lint and format check and mypy over what the wheel ships (pyproject.toml [tool.ruff], [tool.mypy], with the
# exceptions written there); `make test` runs it before the suite. `make format-check` is the format check alone.
LINTED := components plan policy workloads
lint: $(STAMP) format-check
	$(BIN)/ruff check $(LINTED)
	$(BIN)/mypy

format-check: $(STAMP)
	$(BIN)/ruff format --check $(LINTED)

# The unit lane without lint and without building the tools' venvs: the tests that use Checkov or the workloads venv
# run where they find them (as a plain pytest would), else skip.
test-quick: $(STAMP) $(ON_PATH)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS) -m "not local_ray"

# The policy pack's rules over the offline plan (docs/policy.md); non-zero on a mandatory violation.
policy: $(STAMP) $(ON_PATH)
	$(BIN)/python -m plan $(STACK) --policy-pack policy

# Refresh the committed plan snapshots and generated docs (docs/admission.md, the manifests of docs/ray-objects.md)
# after an intended change; review the diff.
snapshots: $(STAMP) $(ON_PATH)
	$(BIN)/python -m pytest -q tests/plan/test_snapshots.py \
		tests/library/test_admission.py::test_docs_list_every_rule_with_its_source \
		tests/project/test_docs.py::test_each_documented_manifest_is_what_its_config_renders --update-snapshots

# Rewrite what is generated from the argument declarations (components/spec/ models): components/spec/args.py and
# the argument reference of docs/library.md, and the stack file reference docs/configuration.md;
# tests/project/test_generate.py fails when any is stale.
generate: $(STAMP) $(ON_PATH)
	$(BIN)/python -m scripts.generate

# Plan synthetic stacks of 1 to 512 slices against the bare-SDK floor, time the hostile stack files and both test
# lanes against their budgets (docs/benchmarks.md).
bench: $(STAMP) $(ON_PATH)
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) $(WORKLOADS_VENV) $(TORCH_VENV) .pytest_cache

# The GPU/TPU comparison of stacks/Pulumi.compare.yaml on this machine: both sides on a local Ray cluster, the CPU
# standing in for the TPU slice and the GPU pool, one worker failure injected per side; the report (report.json,
# report.md, PNG charts) in compare-report/ (docs/compare.md). COMPARE_ARGS adds options, e.g. "--steps 120".
COMPARE_STACK ?= compare
# A job's own dependencies (docs/compare.md, "Bring your own job"): `make compare JOB_REQUIREMENTS=path/to/
# requirements.txt` installs them into the workloads virtualenv, the `python` of every local job, before the run.
JOB_REQUIREMENTS ?=
.PHONY: compare workloads-job-deps
workloads-job-deps: $(WORKLOADS_STAMP)
ifneq ($(strip $(JOB_REQUIREMENTS)),)
	$(WORKLOADS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r $(JOB_REQUIREMENTS)
endif

compare: $(STAMP) $(ON_PATH) $(WORKLOADS_STAMP) workloads-job-deps
	WORKLOADS_PYTHON=$(abspath $(WORKLOADS_VENV))/bin/python $(BIN)/python -m plan.compare $(COMPARE_STACK) --local --out compare-report $(COMPARE_ARGS)

# The serving comparison on this machine: the compare stack's two RayServices (the same Serve application for the TPU
# slice and the GPU pool) on a local Ray cluster, nodes added and removed as Ray's demand asks, under steady, burst
# and sparse open-loop traffic; the report in compare-serve-report/ (docs/compare.md, "Serving").
# COMPARE_SERVE_ARGS adds options, e.g. "--patterns steady,burst --slo-ms 300".
.PHONY: compare-serve
compare-serve: $(STAMP) $(ON_PATH) $(WORKLOADS_STAMP)
	WORKLOADS_PYTHON=$(abspath $(WORKLOADS_VENV))/bin/python $(BIN)/python -m plan.compare $(COMPARE_STACK) --serve --local --out compare-serve-report $(COMPARE_SERVE_ARGS)

# The LLM serving rehearsal on this machine: the compare stack's LLM pair (Ray Serve LLM's OpenAI app on the TPU slice
# and on a GPU pool) on a local Ray cluster, a stand-in engine (the small JAX transformer, not vLLM) streaming tokens
# through the same OpenAI API, under sparse, burst, Poisson and rate-sweep load; TTFT, TPOT, ITL, goodput, cost per
# million tokens, the start from zero; the report in compare-llm-report/ (docs/compare.md, "LLM serving").
# COMPARE_LLM_ARGS adds options, e.g. "--slo ttft=300ms,tpot=20ms --api chat".
.PHONY: compare-llm
compare-llm: $(STAMP) $(ON_PATH) $(WORKLOADS_STAMP)
	WORKLOADS_PYTHON=$(abspath $(WORKLOADS_VENV))/bin/python $(BIN)/python -m plan.compare $(COMPARE_STACK) --llm --local --out compare-llm-report $(COMPARE_LLM_ARGS)
