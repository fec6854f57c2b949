"""Unigram vs Markov χ_b (issue 26, item 3): the Markov forecast wins on a Markov stream, ties on an i.i.d. one."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.transformer.bridge.chi_markov import compare_checkpoint, forecasts, measured_characteristic


def _chain(T: np.ndarray, n: int, rng) -> np.ndarray:
    x = np.empty(n, np.int64)
    x[0] = 0
    c = np.cumsum(T, axis=1)
    u = rng.random(n)
    for t in range(1, n):
        x[t] = min(int(np.searchsorted(c[x[t - 1]], u[t])), T.shape[0] - 1)
    return x


@pytest.mark.parametrize("stay", [0.9, None])
def test_markov_beats_unigram_only_on_a_markov_stream(stay):
    rng = np.random.default_rng(0)
    V = 5
    T = np.full((V, V), 1.0 / V) if stay is None else np.full((V, V), (1 - stay) / (V - 1)) + np.eye(V) * (
        stay - (1 - stay) / (V - 1))
    table = rng.uniform(-1.0, 1.0, (V, 3))
    train, val = _chain(T, 60_000, rng), _chain(T, 60_000, rng)
    r = compare_checkpoint(table, train, val, 16)
    if stay is None:
        assert abs(r["error"]["markov"] - r["error"]["unigram"]) < 3 * r["noise_floor"]
    else:
        assert r["error"]["markov"] < 0.5 * r["error"]["unigram"] and r["better"] == "markov"


def test_forecasts_at_one_step_are_the_unigram_mean():
    rng = np.random.default_rng(1)
    table = rng.uniform(-1, 1, (4, 2))
    train = rng.integers(0, 4, 5000)
    f = forecasts(table, train, np.array([1, 2]))
    # the fitted chain's stationary law differs from the frequencies by the stream's ends and the pseudocounts
    assert np.allclose(f["markov"][0], f["unigram"][0], atol=2.0 / train.size)
    m = measured_characteristic(table, train, np.array([1, 2]))
    assert m.shape == (2, 2) and np.all(np.abs(m) <= 1 + 1e-12)
