"""The default model of workloads.train: a small decoder-only transformer language model (GPT-style: token and position
embeddings, pre-LayerNorm blocks of causal multi-head self-attention and a GELU MLP, the output projection tied to the
token embedding), built with Equinox and trained with Optax's AdamW, on tokens generated here from the seed.

Why Equinox: a model is a PyTree of arrays, so data parallelism is `jax.device_put` of that PyTree and a
`jax.jit` step, as for any JAX array program, and it installs light (equinox 0.13.8 brings jaxtyping and
wadler_lindig only; Flax 0.12 brings Orbax, TensorStore, Treescope and their dependencies) on jax 0.10.2.

The data: a seeded first-order Markov source over the vocabulary (each token has SUCCESSORS possible next tokens,
drawn once from the seed), so that a model that learns lowers the loss from log(vocab) towards log(SUCCESSORS), and
two runs of one seed see the same tokens on any accelerator. Sizes come from a preset, each overridable by a flag:
`tiny` for the local rehearsal (seconds per side on two CPU cores), `gpt-100m` for a live run (about 110M parameters,
GPT-2 small's shape with a 32k vocabulary).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

# The sizes and presets live beside the training command line, which takes them without JAX.
from ray_tpu_gke.workload.lm_config import SUCCESSORS, LmConfig

# isort: split
# The Ray programs find them here too (`lm.config_for`, `lm.PRESETS`).
from ray_tpu_gke.workload.lm_config import DEFAULT_PRESET, PRESETS, SIZE_FLAGS, config_for  # noqa: F401

CHECKPOINT_FILE = "lm.npz"
EVAL_STREAM = 7  # a random stream of its own: never one of the training steps' (which start at 1_000_003)
EVAL_ROWS = 8


# --- data ----------------------------------------------------------------------------------------------------------


def successor_table(seed: int, vocab: int):
    import numpy as np

    return np.random.default_rng([seed, 11]).integers(0, vocab, size=(vocab, SUCCESSORS))


def _sequences(rng, rows: int, config: LmConfig, table):
    import numpy as np

    tokens = np.empty((rows, config.seq_len + 1), np.int32)
    tokens[:, 0] = rng.integers(0, config.vocab, size=rows)
    choices = rng.integers(0, SUCCESSORS, size=(rows, config.seq_len))
    for i in range(config.seq_len):
        tokens[:, i + 1] = table[tokens[:, i], choices[:, i]]
    return tokens


def step_tokens(step: int, size: int, seed: int, config: LmConfig):
    """The global batch of a step as token rows of seq_len + 1 (inputs, then the last target): what
    workloads.token_files writes for the training job to read back."""
    import numpy as np

    rng = np.random.default_rng([seed, 1_000_003 + step])
    return _sequences(rng, size, config, successor_table(seed, config.vocab))


def batch(step: int, size: int, seed: int, config: LmConfig) -> tuple:
    """The global batch of a step, inputs and next-token targets: the same on every process (each takes its own rows)
    and on every accelerator for one seed."""
    tokens = step_tokens(step, size, seed, config)
    return tokens[:, :-1], tokens[:, 1:]


def eval_batch(seed: int, config: LmConfig, rows: int = EVAL_ROWS) -> tuple:
    """A fixed held-out batch of a seed: the evaluation metric and the output fingerprint are computed on it."""
    import numpy as np

    tokens = _sequences(np.random.default_rng([seed, EVAL_STREAM]), rows, config, successor_table(seed, config.vocab))
    return tokens[:, :-1], tokens[:, 1:]


# --- the model -----------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _modules():
    """The Equinox module classes, defined once per process (a PyTree's type is its class: two definitions would be
    two types), on first use so that importing this module needs no JAX."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    class Block(eqx.Module):
        norm1: eqx.nn.LayerNorm
        attention: eqx.nn.MultiheadAttention
        norm2: eqx.nn.LayerNorm
        up: eqx.nn.Linear
        down: eqx.nn.Linear

        def __init__(self, config: LmConfig, key):
            k1, k2, k3 = jax.random.split(key, 3)
            d = config.d_model
            self.norm1, self.norm2 = eqx.nn.LayerNorm(d), eqx.nn.LayerNorm(d)
            self.attention = eqx.nn.MultiheadAttention(
                config.heads,
                d,
                use_query_bias=True,
                use_key_bias=True,
                use_value_bias=True,
                use_output_bias=True,
                key=k1,
            )
            self.up = eqx.nn.Linear(d, d * config.mlp_ratio, key=k2)
            self.down = eqx.nn.Linear(d * config.mlp_ratio, d, key=k3)

        def __call__(self, x, mask):  # x: [seq, d_model], one sequence
            h = jax.vmap(self.norm1)(x)
            x = x + self.attention(h, h, h, mask=mask)
            h = jax.vmap(self.norm2)(x)
            return x + jax.vmap(self.down)(jax.nn.gelu(jax.vmap(self.up)(h)))

    class DecoderLM(eqx.Module):
        embed: eqx.nn.Embedding
        position: jax.Array
        blocks: list
        norm: eqx.nn.LayerNorm

        def __init__(self, config: LmConfig, key):
            keys = jax.random.split(key, config.layers + 2)
            # GPT-2's initialisation scale (normal, std 0.02): with the tied output projection, Equinox's default
            # (std 1) would start the loss far above log(vocab).
            self.embed = eqx.nn.Embedding(weight=0.02 * jax.random.normal(keys[0], (config.vocab, config.d_model)))
            self.position = 0.02 * jax.random.normal(keys[1], (config.seq_len, config.d_model))
            self.blocks = [Block(config, k) for k in keys[2:]]
            self.norm = eqx.nn.LayerNorm(config.d_model)

        def __call__(self, tokens):  # tokens: [seq] -> logits [seq, vocab]
            length = tokens.shape[0]
            x = self.embed.weight[tokens] + self.position[:length]
            mask = jnp.tril(jnp.ones((length, length), bool))  # causal: a position sees itself and those before
            for block in self.blocks:
                x = block(x, mask)
            return jax.vmap(self.norm)(x) @ self.embed.weight.T  # tied output projection

    return DecoderLM


def optimizer(config: LmConfig):
    import optax

    return optax.adamw(config.learning_rate, weight_decay=config.weight_decay)


def init_state(seed: int, config: LmConfig) -> tuple[Any, Any, Any]:
    """(parameters, optimiser state, the model's static part): the first two are PyTrees of arrays.

    The parameters are drawn on the host from the seed, into the shapes Equinox gives the model (traced abstractly,
    with no computation): GPT-2's normal(0, 0.02) for the token and position embeddings, Equinox's default for each
    linear layer (weight and bias uniform within 1/sqrt(fan-in)), ones and zeros for each LayerNorm. Built eagerly
    with JAX instead, each of the few dozen initialisers is a computation of its own that XLA compiles first: about
    2.4 CPU seconds of every process that starts the model on this machine's CPU, and as many compiles on a TPU. The
    optimiser's state (AdamW: a step count and two moments) starts at zero."""
    import equinox as eqx
    import jax
    import numpy as np

    rng = np.random.default_rng(seed)

    def uniform(leaf, bound: float):
        return rng.uniform(-bound, bound, leaf.shape).astype(leaf.dtype)

    def concrete(node):
        if isinstance(node, eqx.nn.Linear):
            bound = 1 / math.sqrt(node.in_features)
            return eqx.tree_at(
                lambda n: (n.weight, n.bias), node, (uniform(node.weight, bound), uniform(node.bias, bound))
            )
        if isinstance(node, eqx.nn.LayerNorm):
            return eqx.tree_at(
                lambda n: (n.weight, n.bias),
                node,
                (np.ones(node.weight.shape, node.weight.dtype), np.zeros(node.bias.shape, node.bias.dtype)),
            )
        if isinstance(node, jax.ShapeDtypeStruct):  # the embeddings
            return (0.02 * rng.standard_normal(node.shape)).astype(node.dtype)
        return node

    abstract = eqx.filter_eval_shape(_modules(), config, jax.random.PRNGKey(seed))
    model = jax.tree.map(
        concrete, abstract, is_leaf=lambda x: isinstance(x, (eqx.nn.Linear, eqx.nn.LayerNorm, jax.ShapeDtypeStruct))
    )
    params, static = eqx.partition(model, eqx.is_array)
    opt_state = jax.tree.map(
        lambda leaf: np.zeros(leaf.shape, leaf.dtype), jax.eval_shape(optimizer(config).init, params)
    )
    params, opt_state = jax.device_put((params, opt_state))  # a copy to the device, which compiles nothing
    return params, opt_state, static


def loss_fn(params, static, x, y):
    """Mean next-token cross-entropy (nats per token) of a batch of sequences."""
    import equinox as eqx
    import jax
    import optax

    logits = jax.vmap(eqx.combine(params, static))(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def make_step(config: LmConfig, static):
    """One optimiser step, pure: (params, opt_state, x, y) -> (params, opt_state, loss). Under jit with the batch
    sharded by rows over every device, XLA sums the gradients across hosts and slices."""
    import equinox as eqx
    import jax

    opt = optimizer(config)

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, static, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return eqx.apply_updates(params, updates), opt_state, loss

    return step


def evaluate(params, static, seed: int, config: LmConfig) -> tuple[float, list[float]]:
    """The evaluation loss on the seed's held-out batch, and each held-out sequence's loss (the fingerprint's
    values), on this process's first device only: no program that every process of a multi-host job must join."""
    import equinox as eqx
    import jax
    import numpy as np
    import optax

    device = jax.local_devices()[0]
    x, y = eval_batch(seed, config)
    local = jax.device_put(params, device)

    @eqx.filter_jit
    def per_sequence(params, x, y):
        logits = jax.vmap(eqx.combine(params, static))(x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(axis=-1)

    values = np.asarray(per_sequence(local, jax.device_put(x, device), jax.device_put(y, device)), np.float32)
    return float(values.mean()), [float(v) for v in values]


def flops_of(compiled) -> Optional[float]:
    """Model FLOPs of one step from XLA's cost analysis of the compiled step (`jax.stages.Compiled.cost_analysis()`: a
    dict in jax 0.10, a list of one dict per program in older JAX), or None where the backend reports none."""
    analysis = compiled.cost_analysis()
    if isinstance(analysis, (list, tuple)):
        analysis = analysis[0] if analysis else None
    flops = (analysis or {}).get("flops")
    return float(flops) if flops and math.isfinite(flops) and flops > 0 else None


# --- checkpoints ---------------------------------------------------------------------------------------------------


def save(directory: Path, params, opt_state, step: int, config: LmConfig) -> Path:
    """Host copies of the parameters and optimiser state, in leaf order, with the config they belong to."""
    import jax
    import numpy as np

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CHECKPOINT_FILE
    leaves = jax.tree.leaves((params, opt_state))
    np.savez(
        path,
        step=np.asarray(step),
        config=np.asarray(json.dumps(asdict(config))),
        **{f"leaf{i:05d}": np.asarray(leaf) for i, leaf in enumerate(leaves)},
    )
    return path


def load(directory: Path, seed: int, config: LmConfig):
    """(params, opt_state, static, step) from a checkpoint of `save`; the config must be the one it was saved with."""
    import jax
    import numpy as np

    params, opt_state, static = init_state(seed, config)
    with np.load(Path(directory) / CHECKPOINT_FILE) as data:
        saved = json.loads(str(data["config"]))
        if saved != asdict(config):
            raise ValueError(f"the checkpoint in {directory} is of another model: {saved}, not {asdict(config)}")
        leaves = [data[f"leaf{i:05d}"] for i in range(len([k for k in data.files if k.startswith("leaf")]))]
        step = int(data["step"])
    treedef = jax.tree.structure((params, opt_state))
    params, opt_state = jax.tree.unflatten(treedef, leaves)
    return params, opt_state, static, step
