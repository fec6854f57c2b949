"""Passkey retrieval: sequence generation, the batch mixer, the greedy scorer and the Wilson intervals."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from simulations.transformer import cli  # noqa: E402
from simulations.transformer.evaluate.passkey import (  # noqa: E402
    CLOSE,
    OPEN,
    mixer,
    overhead,
    passkey_sequence,
    pooled_accuracy,
    sample_sequences,
    score,
    with_intervals,
)

torch.set_num_threads(1)


def text(a: np.ndarray) -> bytes:
    return np.asarray(a, dtype=np.uint8).tobytes()


@pytest.mark.parametrize("depth,where", [(0.0, 0), (0.5, 5), (1.0, 10)])
def test_sequence_layout(depth: float, where: int) -> None:
    filler = np.frombuffer(b"abcdefghij", np.uint8)
    s = text(passkey_sequence(filler, "0427", depth))
    assert s == b"abcdefghij"[:where] + OPEN + b"0427" + CLOSE + b"abcdefghij"[where:] + OPEN + b"0427"
    assert len(s) == len(filler) + overhead(4)


def test_bad_depth_and_key() -> None:
    with pytest.raises(ValueError, match="depth"):
        passkey_sequence(np.zeros(4, np.uint8), "12", 1.5)
    with pytest.raises(ValueError, match="key"):
        passkey_sequence(np.zeros(4, np.uint8), "1a", 0.5)


def test_sample_sequences_length_keys_and_reproducible() -> None:
    tokens = np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 50, np.uint8)
    a, ka = sample_sequences(tokens, 6, 64, 4, np.random.default_rng(3))
    b, kb = sample_sequences(tokens, 6, 64, 4, np.random.default_rng(3))
    assert a.shape == (6, 65) and ka == kb and np.array_equal(a, b)
    for row, k in zip(a, ka):
        s = text(row)
        assert s.endswith(OPEN + k.encode()) and (OPEN + k.encode() + CLOSE) in s and len(k) == 4
    with pytest.raises(ValueError, match="L="):
        sample_sequences(tokens, 1, overhead(4) - 2, 4, np.random.default_rng(0))


def test_mixer_replaces_a_fraction_deterministically() -> None:
    tokens = np.frombuffer(bytes(range(32, 127)) * 40, np.uint8).astype(np.int64)
    x = torch.zeros(16, 64, dtype=torch.long)
    y = torch.ones(16, 64, dtype=torch.long)
    f = mixer(tokens, 0.25, 4, seed=0)
    x1, y1 = f(x, y, 5)
    x2, _ = f(x, y, 5)
    x3, _ = f(x, y, 6)
    assert torch.equal(x1, x2) and not torch.equal(x1[:4], x3[:4])
    assert torch.equal(x1[4:], x[4:]) and torch.equal(y1[4:], y[4:]) and torch.equal(x, torch.zeros_like(x))
    assert torch.equal(x1[:4, 1:], y1[:4, :-1])  # y is x shifted by one
    with pytest.raises(ValueError, match="fraction"):
        mixer(tokens, 1.0, 4, 0)


def test_score_needs_every_digit() -> None:
    seqs = torch.tensor([[9, 1, 2, 3], [9, 1, 2, 3], [9, 1, 2, 3]])  # key digits: tokens 1, 2, 3 -> last 3 targets
    logits = torch.zeros(3, 3, 10)  # predictions at input positions 0..2 for targets 1..3
    for t, d in enumerate((1, 2, 3)):
        logits[:, t, d] = 1.0
    logits[1, 2, 7] = 5.0  # last digit wrong
    logits[2, 0, 4] = 5.0  # first digit wrong
    assert score(logits, seqs, 3).tolist() == [True, False, False]


def test_wilson_intervals_and_pooling() -> None:
    rows = [{"multiple": 1, "L": 64, "depth": d, "correct": k, "trials": 10} for d, k in ((0.0, 10), (1.0, 0))]
    out = with_intervals(rows, "rope")
    assert out[0]["accuracy"] == 1.0 and out[0]["ci_high"] == 1.0 and 0.6 < out[0]["ci_low"] < 0.8
    assert out[1]["accuracy"] == 0.0 and out[1]["ci_low"] == 0.0 and 0.2 < out[1]["ci_high"] < 0.4
    p = pooled_accuracy(out, 1)
    assert p["trials"] == 20 and p["accuracy"] == 0.5 and p["ci_low"] < 0.5 < p["ci_high"]


@pytest.mark.parametrize("argv", [["passkey", "--fraction", "1.5"], ["passkey", "--trials", "0"],
                                  ["passkey", "--workers", "100"], ["passkey", "--variants", "nope,x"]])
def test_cli_rejects_bad_options(argv, capsys, tmp_path) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main([*argv, "--results-dir", str(tmp_path)])
    assert e.value.code == 2
    assert argv[1] in capsys.readouterr().err.strip().splitlines()[-1]
    assert not any(tmp_path.iterdir())


def test_cli_smoke_run(tmp_path, capsys) -> None:
    assert cli.main(["passkey", "--preset", "smoke", "--variants", "rope", "--results-dir", str(tmp_path)]) == 0
    assert (tmp_path / "passkey_smoke.json").exists() and (tmp_path / "transformer_passkey.png").exists()
    assert (tmp_path / "checkpoints" / "smoke-passkey" / "rope.pt").exists()
    assert "rope" in capsys.readouterr().out
