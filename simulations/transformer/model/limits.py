"""Bounds on a checkpoint's ``model_config``, checked before any tensor of its model is built.

A crafted checkpoint of a few hundred kilobytes can ask for ``n_embd = 16384`` and 64 layers; building that
model exhausts memory.  :func:`check_config_limits` refuses such a configuration from its numbers alone: each
dimension has a ceiling, the model it describes is sized on torch's ``meta`` device (shapes, no storage), and
its parameter count must be at most :data:`MAX_PARAMS` and equal to the number of weights the file holds.
"""

from __future__ import annotations

import torch

__all__ = ["LIMITS", "MAX_PARAMS", "check_config_limits"]

#: ceiling of each dimension of a model_config (the paper preset uses 16 layers, 768 wide, vocabulary 32,768)
LIMITS: dict[str, int] = {"n_embd": 8192, "n_layer": 256, "n_head": 256, "vocab_size": 1_000_000,
                          "block_size": 1 << 20, "path_chunk": 1 << 20}
#: ceiling of a model's parameter count (the paper preset has about 3·10⁸)
MAX_PARAMS = 2_000_000_000


def check_config_limits(cfg, weights: dict[str, torch.Tensor]) -> str | None:
    """Why ``cfg`` (a :class:`.model_config.GPTConfig`) is refused for a file holding ``weights``, or ``None``.

    The reason names the field and its bound; nothing of the model is allocated."""
    for name, top in LIMITS.items():
        if getattr(cfg, name) > top:
            return f"its model_config asks for {name}={getattr(cfg, name):,}, above the bound {top:,}"
    from .gpt import GPT

    try:
        with torch.device("meta"):
            params = sum(p.numel() for p in GPT(cfg).parameters())
    except (RuntimeError, ValueError, TypeError, NotImplementedError) as e:
        return f"its model_config does not build a model ({type(e).__name__})"
    if params > MAX_PARAMS:
        return f"its model_config asks for {params:,} parameters, above the bound {MAX_PARAMS:,}"
    held = sum(t.numel() for t in weights.values())
    if held < params:
        return f"its model_config asks for {params:,} parameters, its weights hold {held:,} numbers"
    return None
