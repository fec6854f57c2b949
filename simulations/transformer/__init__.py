"""Decoder-only transformers with accumulated-transformation position mechanisms.

Research code for "Why Do Accumulated Transformations Extrapolate?": small GPT
models trained at one context length and evaluated far beyond it, comparing
RoPE, NoPE, ALiBi, random and learned accumulated rotations, and PaTH.
See :mod:`.model`, :mod:`.data`, :mod:`.train`, :mod:`.evaluate`, :mod:`.cli`.
"""

from .model import GPT, MAIN_VARIANTS, VARIANTS, GPTConfig, alibi_slopes

__all__ = ["GPT", "GPTConfig", "MAIN_VARIANTS", "VARIANTS", "alibi_slopes"]
