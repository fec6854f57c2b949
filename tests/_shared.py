"""Test helpers shared by several test modules: the GPU skip marker and small check parameters."""

from __future__ import annotations

import pytest

from stylized.backend import cupy_available

needs_gpu = pytest.mark.skipif(not cupy_available(), reason="CuPy with a CUDA GPU is not available here")

# small parameters at which the score-side checks (C1–C3) hold with the numpy backend
SCORE_SMALL = {
    "mixing": {"family": "householder,so2-uniform,lazy-haar", "d": 16, "n": [0, 1, 5, 20], "trials": 400,
               "L": [64, 2048], "window_steps": 16384, "n_op": [1, 5], "trials_op": 200, "d_op": 8},
    "mixing-spectrum": {"d": 16, "L_eval": 4096, "L_train": 128, "chains": 8},
    "haar-law": {"family": "householder", "d": 16, "n": 150, "trials": 2000},
    "score-gap": {"d": [16, 64], "trials": 64, "trials_near": 1000, "M": [64, 4096]},
    "transfer": {"d": 16, "L": [64, 2048], "D": 8, "trials": 48},
}
