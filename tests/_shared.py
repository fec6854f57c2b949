"""Test helpers shared by several test modules: the GPU skip marker, the family list, small check
parameters, and the one comparison of two samples in law."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from stylized.core.backend import cupy_available
from stylized.laws.base import StepLaw

needs_gpu = pytest.mark.skipif(not cupy_available(), reason="CuPy with a CUDA GPU is not available here")

# every step family, with parameters that keep every law non-degenerate at small d (one list for all tests);
# "token" is the token-dependent SO(2) family (a fixed table, built by build_family)
FAMILY_CASES = [
    ("so2-uniform", {"omega": 0.7}),
    ("so2-normal", {"sigma": 0.8}),
    ("so2-normal", {"sigma": 0.7, "mu": 0.4}),
    ("rope-random", {"base": 100.0}),
    ("token", {}),
    ("householder", {}),
    ("lazy-haar", {"p": 0.3}),
    ("haar", {}),
]
FAMILY_IDS = [name + ("-mu" if "mu" in kw else "") for name, kw in FAMILY_CASES]


def build_family(name: str, d: int, **kw):
    """``make_family(name, d, **kw)``, plus ``"token"`` (:class:`~stylized.laws.families.TokenAngles` with a fixed
    table of 5 tokens unless ``table``/``probs`` are given) and ``so2-normal`` with a rotation part ``mu``."""
    from stylized.laws.families import SO2Normal, TokenAngles, make_family

    if name == "token":
        table = kw.pop("table", np.random.default_rng(0).uniform(-1.0, 1.0, (5, max(int(d), 2) // 2)))
        return TokenAngles(d=d, table=table, probs=kw.pop("probs", np.array([0.1, 0.2, 0.3, 0.15, 0.25])))
    if name == "so2-normal" and "mu" in kw:
        return SO2Normal(d=d, **kw)
    return make_family(name, d, **kw)


Z_SAME_LAW = 4.0
"""Band of :func:`means_agree` in standard errors: a true difference of 0 fails with probability ≈ 6e-5."""

# small parameters at which the score-side checks (C1–C3) hold with the numpy backend
SCORE_SMALL = {
    "mixing": {"family": "householder,so2-uniform,lazy-haar", "d": 16, "n": [0, 1, 5, 20], "trials": 400,
               "L": [64, 2048], "window_steps": 16384, "n_op": [1, 5], "trials_op": 200, "d_op": 8},
    "mixing-spectrum": {"d": 16, "L_eval": 4096, "L_train": 128, "chains": 8},
    "haar-law": {"family": "householder", "d": 16, "n": 150, "trials": 2000},
    "score-gap": {"d": [16, 64], "trials": 64, "trials_near": 1000, "M": [64, 4096]},
    "transfer": {"d": 16, "L": [64, 2048], "D": 8, "trials": 48},
}


def means_agree(mean_a, se_a, mean_b, se_b, z: float = Z_SAME_LAW) -> np.ndarray:
    """``|mean_a − mean_b| ≤ z·sqrt(se_a² + se_b²)`` elementwise (independent estimates; ``1e-12`` slack so
    that constant samples must agree to rounding)."""
    mean_a, mean_b = np.asarray(mean_a, float), np.asarray(mean_b, float)
    return np.abs(mean_a - mean_b) <= z * np.sqrt(np.square(se_a) + np.square(se_b)) + 1e-12


def samples_agree(a, b, z: float = Z_SAME_LAW) -> bool:
    """Two independent samples (``(n, …)``, compared column by column) have means within :func:`means_agree`."""
    x = np.asarray(a, float).reshape(len(a), -1)
    y = np.asarray(b, float).reshape(len(b), -1)
    se_x, se_y = np.sqrt(x.var(axis=0, ddof=1) / len(x)), np.sqrt(y.var(axis=0, ddof=1) / len(y))
    return bool(np.all(means_agree(x.mean(axis=0), se_x, y.mean(axis=0), se_y, z)))


def report_fuzz(suite: str, tried: dict, failed: dict) -> None:
    """Print a fuzz suite's counts (inputs tried and failed per target) and append them to
    ``$STYLIZED_FUZZ_REPORT`` when set (the slow ``make fuzz`` run collects both suites there)."""
    import json
    import os

    report = {"tried": dict(tried), "failed": dict(failed), "total_tried": sum(tried.values()),
              "total_failed": sum(failed.values())}
    print(f"\nfuzz {suite.upper()}:", json.dumps(report))
    if os.environ.get("STYLIZED_FUZZ_REPORT"):
        with open(os.environ["STYLIZED_FUZZ_REPORT"], "a") as f:
            f.write(json.dumps({"suite": suite, **report}) + "\n")


@dataclass(frozen=True)
class UserReflection(StepLaw):
    """A user's law, only ``d`` and ``sample``: dense reflections ``I − 2wwᵀ`` (no closed-form mean, isotropy not
    declared, so every theory and premise is estimated: E[M] by Monte Carlo, the post-mixing law by a reference sample)."""

    d: int

    def sample(self, xrng, shape, xp=np):
        g = xrng.standard_normal(tuple(shape) + (self.d,))
        w = g / xp.linalg.norm(g, axis=-1, keepdims=True)
        return xp.eye(self.d) - 2.0 * w[..., :, None] * w[..., None, :]
