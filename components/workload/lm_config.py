"""The sizes of the training workload's language model (workloads.lm: a decoder-only transformer, Equinox and Optax):
the presets and the flags that override them, which `python -m workloads.train`'s command line takes
(`train_args`). No JAX import: the planner parses a RayJob's entrypoint with the same presets.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

# The seeded Markov source's successors per token (workloads.lm's data): a vocabulary needs at least as many tokens.
SUCCESSORS = 4


@dataclass(frozen=True)
class LmConfig:
    vocab: int
    d_model: int
    layers: int
    heads: int
    seq_len: int
    mlp_ratio: int = 4
    batch_size: int = 32  # sequences per global batch, unless --batch-size says otherwise
    learning_rate: float = 3e-3
    weight_decay: float = 0.01

    def problems(self) -> list[str]:
        out = []
        if min(self.vocab, self.d_model, self.layers, self.heads, self.seq_len, self.mlp_ratio) < 1:
            out.append("--vocab, --d-model, --layers, --heads, --seq-len must be at least 1")
        elif self.d_model % self.heads:
            out.append(f"--d-model {self.d_model} is not a multiple of --heads {self.heads}")
        if self.vocab < SUCCESSORS:
            out.append(f"--vocab must be at least {SUCCESSORS}")
        return out

    def describe(self) -> dict:
        """The model as the result document's `model` says it (camelCase, as every field of the document)."""
        return {
            "name": "decoder-only transformer LM (workloads.lm: Equinox, Optax AdamW)",
            "parameters": self.parameters,
            "vocab": self.vocab,
            "dModel": self.d_model,
            "layers": self.layers,
            "heads": self.heads,
            "seqLen": self.seq_len,
            "mlpRatio": self.mlp_ratio,
            "learningRate": self.learning_rate,
            "weightDecay": self.weight_decay,
        }

    @property
    def parameters(self) -> int:
        """Trainable parameters: embeddings (the output projection shares the token embedding), per block two
        LayerNorms, the attention's four projections with biases and the MLP, and the final LayerNorm."""
        d, hidden = self.d_model, self.d_model * self.mlp_ratio
        block = 2 * 2 * d + 4 * (d * d + d) + (d * hidden + hidden) + (hidden * d + d)
        return self.vocab * d + self.seq_len * d + self.layers * block + 2 * d


PRESETS = {
    "tiny": LmConfig(vocab=128, d_model=32, layers=2, heads=2, seq_len=32, batch_size=16, learning_rate=1e-2),
    # GPT-2 small's depth and width (12 layers, 768 wide, 12 heads; Radford et al. 2019, table 2) with a 32k vocab.
    "gpt-100m": LmConfig(
        vocab=32768,
        d_model=768,
        layers=12,
        heads=12,
        seq_len=1024,
        batch_size=256,
        learning_rate=6e-4,
        weight_decay=0.1,
    ),
}
DEFAULT_PRESET = "tiny"
SIZE_FLAGS = ("vocab", "d_model", "layers", "heads", "seq_len")


def config_for(preset: str = DEFAULT_PRESET, **overrides: Any) -> LmConfig:
    """A preset with the flags given (None leaves the preset's value)."""
    if preset not in PRESETS:
        raise ValueError(f"--preset {preset!r} is not one of {', '.join(PRESETS)}")
    return replace(PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None})
