"""Crafted checkpoints whose model_config asks for a huge model: refused from the numbers, before any tensor.

Each case keeps the small real weights of the ``good`` fixture and inflates one entry of ``model_config``;
the loader must refuse it in one line naming the file and the bound (exit 2 through ``eval``), fast, with
the process's memory not growing by the model's size.
"""

from __future__ import annotations

import resource
import time

import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.model.limits import LIMITS, MAX_PARAMS  # noqa: E402
from simulations.transformer.train.loop import load_model  # noqa: E402
from tests.transformer._faults import _one_line_refusal, _saved  # noqa: E402

#: (model_config overrides, a word the refusal names)
CRAFTED = [
    ({"n_embd": 16384, "n_layer": 64, "n_head": 64}, "n_embd"),
    ({"n_embd": 8192, "n_layer": 64, "n_head": 64}, "parameters"),
    ({"n_layer": 10**6}, "n_layer"),
    ({"n_head": 512, "n_embd": 1024}, "n_head"),
    ({"vocab_size": 10**9}, "vocab_size"),
    ({"vocab_size": 900_000, "n_embd": 4096, "n_head": 32}, "parameters"),
    ({"block_size": 1 << 40}, "block_size"),
    ({"path_chunk": 1 << 40}, "path_chunk"),
    ({"n_layer": 200, "n_embd": 1024, "n_head": 16}, "parameters"),  # in bounds each, but not these weights
    ({"n_layer": 2}, "parameters"),  # one layer more than the weights hold
]


@pytest.mark.parametrize("over, word", CRAFTED, ids=[w + str(i) for i, (_, w) in enumerate(CRAFTED)])
def test_crafted_config_refused_before_building(over, word, good_ck, tmp_path):
    ck = {**good_ck, "model_config": {**good_ck["model_config"], **over}}
    p = _saved(tmp_path, ck)
    assert p.stat().st_size < 1_000_000
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    msg = _one_line_refusal(lambda: load_model(p, "cpu"), "checkpoint:", str(p), word)
    assert time.perf_counter() - t0 < 20, msg
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 200_000, msg  # KiB: nothing of the model
    assert "bound" in msg or "weights hold" in msg, msg


def test_real_checkpoint_within_limits(good):
    model, ck = load_model(good, "cpu")
    assert model.num_params() <= MAX_PARAMS
    assert all(ck["model_config"][k] <= top for k, top in LIMITS.items())


def test_eval_refuses_crafted_checkpoint(good_ck, tmp_path, capsys):
    from simulations.transformer.paths import checkpoint_path
    from tests.transformer._faults import _assert_refused, _run

    p = checkpoint_path("smoke", "rope", 0, tmp_path)
    p.parent.mkdir(parents=True)
    torch.save({**good_ck, "model_config": {**good_ck["model_config"], "n_embd": 16384, "n_layer": 64,
                                            "n_head": 64}}, p)
    rc, err, _ = _run(["transformer", "eval", "--variant", "rope", "--preset", "smoke", "--results-dir",
                       str(tmp_path)], capsys)
    _assert_refused(rc, err, str(p), "n_embd", "bound")
