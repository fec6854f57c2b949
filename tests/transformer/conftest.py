"""Fixtures of the transformer tests: a real (tiny) checkpoint, the smoke preset, one step on synthetic bytes
(``good``, its bytes ``good_bytes`` and its loaded dict ``good_ck``; one per test module that asks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    torch = pytest.importorskip("torch")
    from simulations.transformer.model.presets import Preset
    from simulations.transformer.train.loop import train
    from tests.transformer._faults import _corpus

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("good")
    info = train(Preset.from_name("smoke", variant="rope", steps=1), corpus=_corpus(), results_dir=root, progress=False,
                 device="cpu")
    return Path(info["checkpoint"])


@pytest.fixture(scope="module")
def good_bytes(good) -> bytes:
    return good.read_bytes()


@pytest.fixture(scope="module")
def good_ck(good) -> dict:
    torch = pytest.importorskip("torch")
    return torch.load(good, map_location="cpu", weights_only=True)


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory) -> Path:
    """A small text corpus: 20 files of random words in two sub-folders, and a binary file to be ignored."""
    d = tmp_path_factory.mktemp("corpus")
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "def", "return", "(x)", "\n", "  ", "=", "1"]
    for i in range(20):
        sub = d / ("b" if i % 2 else "a")
        sub.mkdir(exist_ok=True)
        (sub / f"f{i:02d}.txt").write_text(" ".join(rng.choice(words, 400)))
    (d / "ignored.bin").write_bytes(b"\x00" * 100)
    return d
