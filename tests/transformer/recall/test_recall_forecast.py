"""The recall forecast (issue 26, item 2): its transport reproduces the model's own logits, its token laws are
laws, its verdict follows the fixed rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.evaluate.probe import full_scores, score_bias  # noqa: E402
from simulations.transformer.recall.forecast import (  # noqa: E402
    SHORT_DISTANCES,
    _logits,
    forecast_accuracy,
    measure,
    token_law,
)
from simulations.transformer.recall.forecast_run import CENSORED, judge  # noqa: E402
from simulations.transformer.recall.task import CALIBRATED, RecallTask, make_batch, train_recall  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module", params=["rope", "learned-qk", "random-qkv", "path", "fox", "alibi", "nope"])
def model(request):
    m, _ = train_recall(request.param, RecallTask(), 2, 0, **CALIBRATED, log_every=1)
    return request.param, m


def _model_logits(model, seed: int = 0):
    """The last layer's logits (with bias) on the first short layout, as :func:`measure` reads them."""
    task = RecallTask()
    d = SHORT_DISTANCES[0]
    x, _ = make_batch(task, np.random.default_rng([seed, 7, d]), 64, task.length, task.n_pairs, d)
    with torch.no_grad():
        _, _, inters = model(x, generator=torch.Generator().manual_seed(20_011 + seed + d), return_intermediates=True)
    attn = model.blocks[-1].attn
    return (full_scores(attn, inters[-1]) + score_bias(attn, inters[-1])).numpy()


def test_transport_reproduces_the_model(model):
    """Fed the measured steps in their own order, the forecast's ``s_ij`` equals the model's logits."""
    name, m = model
    rec = measure(m, RecallTask(), 0, name)
    logit = _model_logits(m)
    task = RecallTask()
    i = task.length - 2 * task.n_pairs  # the first query of sequence 0 (rec.q[0])
    picks = np.arange(i)[None, :]  # positions 1 … i of sequence 0
    keys = np.concatenate([rec.k_bos[:1], rec.k_pool[: i - 1]])[None]
    s = _logits(rec, rec.q[:1], keys, picks)[0]
    want = logit[0, rec.head, i, :i]
    assert np.allclose(s, want, atol=2e-4 * max(1.0, np.abs(want).max())), (name, np.abs(s - want).max())


def test_token_laws_are_laws(model):
    name, m = model
    rec = measure(m, RecallTask(), 0, name)
    uni, seen = token_law(rec, "unigram")
    assert math.isclose(float(uni.probs.sum()), 1.0) and seen.size == uni.probs.size
    mk, _ = token_law(rec, "markov")
    assert np.allclose(mk.transition.sum(1), 1.0) and (mk.transition > 0).all()
    with pytest.raises(ValueError, match="version"):
        token_law(rec, "zipf")
    rows = forecast_accuracy(rec, [16, 128], "task-layout", trials=16)
    assert [r["distance"] for r in rows] == [16, 128] and all(0 <= r["lo"] <= r["p1"] <= r["hi"] <= 1 for r in rows)


def _run(variant, curve):
    fc = [{"distance": d, "p1": p} for d, p in curve.items()]
    return {"variant": variant, "seed": 0, "head": 0, "offset": 1,
            "forecast": {"unigram": fc, "markov": fc, "task-layout": fc}}


def test_judge_rule():
    """Factor-2 verdict, censoring beyond the grid, and the nulls' errors, on hand-made curves."""
    measured = {"a": {"cells": {64: {"mean": 0.9}, 128: {"mean": 0.9}, 256: {"mean": 0.3}}},
                "b": {"cells": {64: {"mean": 0.9}, 128: {"mean": 0.9}, 256: {"mean": 0.9}}}}
    runs = [_run("a", {64: 0.9, 128: 0.9, 256: 0.9, 512: 0.1}), _run("b", {64: 0.2, 128: 0.1, 256: 0.1})]
    v = judge(runs, measured)
    by = {r["variant"]: r for r in v["variants"]}
    assert by["a"]["measured_horizon"] == 256 and by["a"]["unigram"]["horizon"] == 512 and by["a"]["unigram"]["holds"]
    assert by["b"]["measured_horizon"] == CENSORED and not by["b"]["unigram"]["holds"]
    want = (abs(math.log(512 / 256)) + abs(math.log(64 / CENSORED))) / 2
    assert math.isclose(v["mae_ln_horizon"]["unigram"], want)
    assert math.isclose(v["mae_ln_horizon"]["keeps"], abs(math.log(CENSORED / 256)) / 2)


def test_the_scored_process_reads_no_horizon():
    """The scored token process is fixed (Markov) whatever the errors; every process gets skill intervals."""
    from simulations.transformer.recall.forecast_run import SCORED, _renamed, skill_interval

    measured = {v: {"cells": {64: {"mean": 0.9}, 128: {"mean": 0.9}, 256: {"mean": 0.3}}} for v in "abc"}
    good = [{"distance": d, "p1": p} for d, p in {64: 0.9, 128: 0.9, 256: 0.1}.items()]
    bad = [{"distance": d, "p1": p} for d, p in {64: 0.1, 128: 0.1, 256: 0.1}.items()]
    runs = [{"variant": v, "seed": 0, "head": 0, "offset": 1,
             "forecast": {"unigram": bad, "markov": bad, "task-layout": good}} for v in "abc"]
    v = judge(runs, measured)
    assert v["scored"] == SCORED == "markov" and "kept" not in v  # the best process (task-layout) is not chosen
    assert v["n_holding"] == 0 and v["mae_ln_horizon"]["task-layout"] == 0.0
    assert set(v["skill"]) == {"unigram", "markov", "task-layout"}
    s = v["skill"]["task-layout"]["keeps"]
    assert s["skill"] == 1.0 and s["ci_low"] <= s["skill"] <= s["ci_high"]
    iv = skill_interval([0.1, 0.2, 0.3], [0.0, 0.0, 0.0])
    assert iv["skill"] is None  # an exact null: skill undefined, not NaN
    old = _renamed({"forecast": {"unigram": [], "markov": [], "task": []}})
    assert set(old["forecast"]) == {"unigram", "markov", "task-layout"}
