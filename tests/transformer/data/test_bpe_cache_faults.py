"""Damaged BPE caches: the tokenizer file and the token arrays are checked, named in one line and rebuilt.

Each case damages one file of a real cache (a small text corpus, vocabulary 300) and loads the corpus again:
the load succeeds with the same token ids as the intact cache, and stderr names the damaged file once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from simulations.transformer.data import corpus as tdata  # noqa: E402
from simulations.transformer.data import tokenizer as bpe  # noqa: E402

VOCAB = 300


@pytest.fixture(scope="module")
def built(text_dir, tmp_path_factory) -> tuple[Path, tdata.Corpus]:
    cache = tmp_path_factory.mktemp("bpe-cache")
    return cache, tdata.load_path(text_dir, tokenizer="bpe", vocab=VOCAB, cache_dir=cache)


def _npz(path: Path, **arrays) -> None:
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _other_tokenizer(path: Path, text_dir: Path, tmp: Path) -> None:
    """A valid tokenizer of another vocabulary (more tokens than this cache's)."""
    texts = [p.read_text() for p in sorted(text_dir.rglob("*.txt"))]
    bpe.train_bpe(texts, VOCAB + 200, tmp / "big.json")
    shutil.copyfile(tmp / "big.json", path)


TOKENIZER_CASES = {
    "empty": lambda p, d, t: p.write_bytes(b""),
    "truncated": lambda p, d, t: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "random bytes": lambda p, d, t: p.write_bytes(np.random.default_rng(0).bytes(2000)),
    "json not a tokenizer": lambda p, d, t: p.write_text("{}"),
    "json list": lambda p, d, t: p.write_text("[1, 2, 3]"),
    "no endoftext": lambda p, d, t: p.write_text(p.read_text().replace("<|endoftext|>", "<|other|>")),
    "bigger vocabulary": _other_tokenizer,
}
TOKEN_CASES = {
    "empty": lambda p, v: p.write_bytes(b""),
    "truncated": lambda p, v: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "random bytes": lambda p, v: p.write_bytes(np.random.default_rng(1).bytes(4000)),
    "no val": lambda p, v: _npz(p, train=np.arange(10, dtype=np.uint16)),
    "float ids": lambda p, v: _npz(p, train=np.ones(10), val=np.ones(10)),
    "ids past the vocabulary": lambda p, v: _npz(p, train=np.full(10, v + 5, np.uint16), val=np.ones(10, np.uint16)),
    "negative ids": lambda p, v: _npz(p, train=-np.ones(10, np.int32), val=np.ones(10, np.int32)),
    "2-D": lambda p, v: _npz(p, train=np.ones((2, 5), np.uint16), val=np.ones(10, np.uint16)),
    "empty arrays": lambda p, v: _npz(p, train=np.zeros(0, np.uint16), val=np.zeros(0, np.uint16)),
    "object array": lambda p, v: _npz(p, train=np.array([{"a": 1}], dtype=object), val=np.ones(3, np.uint16)),
}


def _fresh(built, tmp_path) -> Path:
    cache, _ = built
    mine = tmp_path / "cache"
    shutil.copytree(cache, mine)
    return mine


@pytest.mark.parametrize("case", sorted(TOKENIZER_CASES))
def test_damaged_tokenizer_is_named_and_retrained(case, built, text_dir, tmp_path, capsys):
    mine = _fresh(built, tmp_path)
    (tok_file,) = mine.glob("bpe-*.json")
    TOKENIZER_CASES[case](tok_file, text_dir, tmp_path)
    capsys.readouterr()
    c = tdata.load_path(text_dir, tokenizer="bpe", vocab=VOCAB, cache_dir=mine)
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and str(tok_file) in err[0] and "unusable tokenizer" in err[0], err
    np.testing.assert_array_equal(c.train, built[1].train)
    np.testing.assert_array_equal(c.val, built[1].val)
    assert bpe.bpe_problem(tok_file, VOCAB)[1] is None  # rebuilt in place


@pytest.mark.parametrize("case", sorted(TOKEN_CASES))
def test_damaged_token_cache_is_named_and_encoded_again(case, built, text_dir, tmp_path, capsys):
    mine = _fresh(built, tmp_path)
    (arrays,) = mine.glob("tokens-*.npz")
    TOKEN_CASES[case](arrays, built[1].vocab_size)
    capsys.readouterr()
    c = tdata.load_path(text_dir, tokenizer="bpe", vocab=VOCAB, cache_dir=mine)
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and str(arrays) in err[0] and "unusable token cache" in err[0], err
    np.testing.assert_array_equal(c.train, built[1].train)
    np.testing.assert_array_equal(c.val, built[1].val)


def test_intact_cache_is_read_silently(built, text_dir, capsys):
    cache, c0 = built
    capsys.readouterr()
    c = tdata.load_path(text_dir, tokenizer="bpe", vocab=VOCAB, cache_dir=cache)
    assert capsys.readouterr().err == ""
    np.testing.assert_array_equal(c.train, c0.train)


def test_damaged_tokenizer_without_texts_is_refused(built, tmp_path):
    from stylized.core.errors import InvalidInput

    mine = _fresh(built, tmp_path)
    (tok_file,) = mine.glob("bpe-*.json")
    tok_file.write_text(json.dumps({"model": 1}))
    key = tok_file.stem[len("bpe-"):]
    with pytest.raises(InvalidInput, match="unusable"):
        bpe.get_bpe(None, VOCAB, key, mine)
