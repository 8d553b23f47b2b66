"""The serving comparison's Serve application (workloads.serve_bench) without Serve: its replica class built directly
in the workloads interpreter, its scoring checked against workloads.lm's own loss, its greedy tokens against the
model's own logits, padding shown to change no answer, and malformed requests refused with the reason."""

from __future__ import annotations

import pytest

# The script half (workloads/conftest.py `seen`), run once in the workloads interpreter: what it saw.
SCRIPT_HALF = ("the serve_bench check", 600)
SCRIPT = r'''
import json, sys

import numpy as np

from workloads import lm, serve_bench

replica = serve_bench.Scorer.func_or_class()
model, config = replica.model, replica.model.config
params, _, static = lm.init_state(serve_bench.SEED, config)
prompt = [5, 17, 3, 99, 42, 42, 8]
seen = {"info": replica.info, "config": {"vocab": config.vocab, "seqLen": config.seq_len}}

# The reference: lm.loss_fn is the mean next-token cross-entropy, so a sequence's log-likelihood is -loss x (len - 1).
x, y = np.asarray([prompt[:-1]]), np.asarray([prompt[1:]])
seen["reference"] = -float(lm.loss_fn(params, static, x, y)) * (len(prompt) - 1)
seen["alone"] = replica.answer([prompt], 0)["logLikelihoods"]
seen["among"] = replica.answer([[1, 2], prompt, [7] * config.seq_len, [3], [4, 4, 4]], 0)["logLikelihoods"]

import equinox as eqx
logits = eqx.combine(params, static)(np.asarray(prompt))
seen["argmax"] = int(np.argmax(np.asarray(logits)[-1]))
seen["generated"] = replica.answer([prompt, [1, 2, 3]], 6)["generated"]
seen["again"] = replica.answer([prompt], 6)["generated"]
seen["slid"] = replica.answer([list(range(config.seq_len))], 3)["generated"]

refused = {}
for name, sequences, new in (("emptyList", [], 0), ("outOfVocab", [[config.vocab]], 0), ("tooLong",
                             [[1] * (config.seq_len + 1)], 0), ("notIds", [["a"]], 0), ("negative", [[1]], -1),
                             ("tooMany", [[1]], serve_bench.MAX_NEW_TOKENS + 1), ("boolean", [[True]], 0)):
    try:
        replica.answer(sequences, new)
        refused[name] = None
    except ValueError as error:
        refused[name] = str(error)
seen["refused"] = refused

# Four requests at once through the endpoint: each answered, never two computing at the same time.
import asyncio
import threading
import time
class Body:
    def __init__(self, body):
        self.body = body
    async def json(self):
        return self.body
lock, computing, most = threading.Lock(), [0], [0]
answer = replica.answer
def counted(sequences, new):
    with lock:
        computing[0] += 1
        most[0] = max(most[0], computing[0])
    time.sleep(0.05)  # long enough that requests computed on threads of their own would overlap
    try:
        return answer(sequences, new)
    finally:
        with lock:
            computing[0] -= 1
replica.answer = counted
async def four():
    return await asyncio.gather(*(replica(Body({"sequences": [prompt], "generate": 2})) for _ in range(4)))
seen["atOnce"] = {"answers": [a["generated"] for a in asyncio.run(four())]}
seen["atOnce"]["most"] = most[0]
with open(sys.argv[1], "w") as out:
    json.dump(seen, out)
'''


def test_the_replica_states_its_start_up_and_serves_the_tiny_transformer_by_default(seen):
    info = seen["info"]
    assert info["loadS"] > 0 and info["compileS"] > 0 and info["startedAt"] > 0 and info["platform"] == "cpu"
    assert info["model"]["name"].startswith("decoder-only transformer") and info["model"]["vocab"] == 128


def test_scoring_is_the_models_log_likelihood_whatever_the_padding(seen):
    assert seen["alone"][0] == pytest.approx(seen["reference"], rel=1e-4)
    assert seen["reference"] < 0
    # The same sequence padded into a batch of 8 rows beside longer and shorter ones: the same score.
    assert seen["among"][1] == pytest.approx(seen["alone"][0], rel=1e-4)
    assert len(seen["among"]) == 5 and seen["among"][3] == 0.0  # one token: nothing to predict


def test_generation_is_greedy_deterministic_and_slides_a_full_window(seen):
    first, other = seen["generated"]
    assert len(first) == len(other) == 6 and first[0] == seen["argmax"]
    assert seen["again"][0] == first  # the batch it came in changes nothing
    assert len(seen["slid"][0]) == 3 and all(0 <= t < seen["config"]["vocab"] for t in seen["slid"][0])


def test_malformed_requests_are_refused_with_the_reason(seen):
    refused = seen["refused"]
    assert all(refused.values()), refused
    assert "1 to 64" in refused["emptyList"] and "from 0 to 127" in refused["outOfVocab"]
    assert "1 to 32 token ids" in refused["tooLong"] and "from 0 to 1024" in refused["tooMany"]


def test_a_replica_computes_one_request_at_a_time_and_answers_each(seen):
    at_once = seen["atOnce"]
    assert at_once["most"] == 1
    assert len(at_once["answers"]) == 4 and all(a == at_once["answers"][0] for a in at_once["answers"])
