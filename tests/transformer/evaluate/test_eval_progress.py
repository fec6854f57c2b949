"""The evaluation's progress bar (issue 38: the spot-check's evaluation printed nothing for minutes): it counts
every evaluated token on stderr, and turning it on changes no loss."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.evaluate.extrapolation import window_losses  # noqa: E402
from simulations.transformer.model.config import GPTConfig  # noqa: E402
from simulations.transformer.model.gpt import GPT  # noqa: E402

L_TRAIN = 16


def test_window_losses_progress_counts_every_token(capsys) -> None:
    torch.manual_seed(0)
    model = GPT(GPTConfig(variant="rope", n_layer=1, n_embd=16, n_head=2, block_size=L_TRAIN, dropout=0.0)).eval()
    tokens = np.random.default_rng(0).integers(0, 256, size=2000)
    quiet = window_losses(model, tokens, [1, 2, 4], 5, batch_tokens=48, device="cpu")
    assert capsys.readouterr().err == ""
    shown = window_losses(model, tokens, [1, 2, 4], 5, batch_tokens=48, device="cpu", progress=True)
    err = capsys.readouterr().err
    total = 5 * L_TRAIN * (1 + 2 + 4)
    assert "evaluate to 4x L_train" in err and f"{total}/{total}" in err, err[-300:]
    for m in quiet:
        for k in quiet[m]:
            np.testing.assert_array_equal(quiet[m][k], shown[m][k])
