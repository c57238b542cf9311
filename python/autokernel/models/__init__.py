"""Registry of the models the bridge ships: each entry builds a model and makes inputs for it.

    spec = models.get("llama-tiny")
    torch.manual_seed(0)
    model = spec.build()
    args = spec.make_inputs(model, spec.default_shape, torch.device("cpu"), torch.Generator().manual_seed(0))
    out = model(*args)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from . import bert, gpt2, llama


@dataclass(frozen=True)
class ModelSpec:
    name: str
    summary: str
    # Weights come from torch's global RNG: seed it (torch.manual_seed) first for a reproducible model.
    build: Callable[[], nn.Module]
    # (model, shape, device, generator) -> the positional args of model(*args).
    make_inputs: Callable[[nn.Module, tuple[int, ...], torch.device, torch.Generator], tuple]
    default_shape: tuple[int, ...]
    input_kind: str


def _token_inputs(name: str, with_targets: bool):
    """make_inputs for a model fed token ids of shape (batch, seq) and, for an LM, targets too."""

    def make_inputs(
        model: nn.Module, shape: tuple[int, ...], device: torch.device, generator: torch.Generator
    ) -> tuple:
        shape = tuple(shape)
        if len(shape) != 2 or not all(isinstance(n, int) and n > 0 for n in shape):
            raise ValueError(f"{name} takes a shape of 2 positive numbers (batch, seq), got {shape}")
        max_positions = model.config.max_positions
        if shape[1] > max_positions:
            raise ValueError(f"{name}: seq {shape[1]} exceeds the model's {max_positions} positions")
        # Drawn on the CPU whatever the device, so that CPU and GPU runs see the same ids.
        draws = 2 if with_targets else 1
        vocab = model.config.vocab_size
        return tuple(torch.randint(0, vocab, shape, generator=generator).to(device) for _ in range(draws))

    return make_inputs


def _spec(name: str, summary: str, model_class, config, language_model: bool, default_shape) -> ModelSpec:
    return ModelSpec(
        name=name,
        summary=summary,
        build=lambda: model_class(config),
        make_inputs=_token_inputs(name, with_targets=language_model),
        default_shape=default_shape,
        input_kind="tokens",
    )


_FULL = (8, 512)
_TINY = (2, 16)
# GPU-bound: four of the 7B configuration's 32 layers on one 2048-token sequence do ~1.7 TFLOP
# per forward pass, so the kernels, not the launches, set its time (the compact LLaMA at 8 x 512
# is launch-bound on an H100).
LLAMA_7B_4L = dataclasses.replace(llama.LLAMA_7B, n_layers=4)
_SPECS = (
    _spec("gpt2", "GPT-2 small (124M)", gpt2.GPT2, gpt2.GPT2_SMALL, True, _FULL),
    _spec("llama", "compact LLaMA (125M, grouped-query)", llama.Llama, llama.LLAMA_COMPACT, True, _FULL),
    _spec("llama-7b", "LLaMA 7B configuration (6.7B)", llama.Llama, llama.LLAMA_7B, True, _FULL),
    _spec("llama-7b-4l", "LLaMA 7B configuration, 4 of its 32 layers (GPU-bound at 1 x 2048)", llama.Llama,
          LLAMA_7B_4L, True, (1, 2048)),
    _spec("bert", "BERT-base encoder (109M)", bert.Bert, bert.BERT_BASE, False, _FULL),
    _spec("gpt2-tiny", "GPT-2 for fast tests (0.12M)", gpt2.GPT2, gpt2.GPT2_TINY, True, _TINY),
    _spec("llama-tiny", "LLaMA for fast tests (0.12M)", llama.Llama, llama.LLAMA_TINY, True, _TINY),
    _spec("bert-tiny", "BERT for fast tests (0.12M)", bert.Bert, bert.BERT_TINY, False, _TINY),
)
MODELS: dict[str, ModelSpec] = {spec.name: spec for spec in _SPECS}


def get(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}") from None
