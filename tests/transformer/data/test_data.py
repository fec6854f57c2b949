"""Local byte-level BPE (roundtrip, cache) and local OpenWebText folders (jsonl / txt / parquet)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from simulations.transformer.data import corpus as data  # noqa: E402
from simulations.transformer.data import corpus_files  # noqa: E402
from simulations.transformer.data import tokenizer as bpe  # noqa: E402

WORDS = ["the", "model", "rotates", "keys", "and", "queries", "by", "angles", "def", "return",
         "héllo", "naïve", "→", "λ", "(x)", "\n", "  ", ",", "."]


def _doc(rng, n=120) -> str:
    return " ".join(rng.choice(WORDS, n))


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("bpe_corpus")
    rng = np.random.default_rng(0)
    for i in range(20):
        (d / f"f{i:02d}.txt").write_text(_doc(rng), encoding="utf-8")
    return d


def test_bpe_roundtrip_and_cache(text_dir, tmp_path, monkeypatch):
    c = data.load_corpus(str(text_dir), tokenizer="bpe", vocab=300, cache_dir=tmp_path)
    assert c.tokenizer == "bpe" and 256 < c.vocab_size <= 300
    assert c.train.dtype == np.uint16 and int(c.train.max()) < c.vocab_size
    files = corpus_files.text_files(text_dir)
    train_text = "".join(f.read_text(encoding="utf-8") + "\n\n" for f in files[:-1])
    assert c.decode(c.train) == train_text  # lossless
    assert c.decode(c.val) == files[-1].read_text(encoding="utf-8") + "\n\n"
    raw = data.load_path(text_dir)
    assert len(c.train) < len(raw.train)  # merges compress
    assert "BPE vocab" in c.description
    # second call: tokenizer and token arrays come from the cache, nothing is trained or encoded
    monkeypatch.setattr(bpe, "train_bpe", lambda *a, **k: pytest.fail("retrained"))
    monkeypatch.setattr(bpe, "encode", lambda *a, **k: pytest.fail("re-encoded"))
    again = data.load_corpus(str(text_dir), tokenizer="bpe", vocab=300, cache_dir=tmp_path)
    assert np.array_equal(again.train, c.train) and np.array_equal(again.val, c.val)
    assert len(list(tmp_path.glob("bpe-*.json"))) == 1


def test_bpe_cache_is_keyed_by_vocab_and_corpus(text_dir, tmp_path):
    a = data.load_corpus(str(text_dir), tokenizer="bpe", vocab=280, cache_dir=tmp_path)
    b = data.load_corpus(str(text_dir), tokenizer="bpe", vocab=300, cache_dir=tmp_path)
    c = data.load_corpus(str(text_dir / "f00.txt"), tokenizer="bpe", vocab=300, cache_dir=tmp_path)
    assert a.vocab_size < b.vocab_size
    assert len({a.tokenizer_file, b.tokenizer_file, c.tokenizer_file}) == 3


def test_tokenizer_choice_is_validated():
    with pytest.raises(ValueError, match="tokenizer"):
        data.load_corpus(None, tokenizer="wordpiece")
    from simulations.transformer.model.presets import Preset

    with pytest.raises(ValueError, match="tokenizer"):
        Preset.from_name("smoke", tokenizer="sentencepiece")
    tcfg = Preset.from_name("cpu").train
    assert tcfg.tokenizer == "bytes" and tcfg.bpe_vocab == 4096
    tcfg = Preset.from_name("paper").train
    assert (tcfg.tokenizer, tcfg.bpe_vocab, tcfg.data, tcfg.max_bytes) == ("bpe", 32768, "owt", None)


@pytest.fixture(scope="module")
def owt_docs():
    rng = np.random.default_rng(1)
    return [_doc(rng, 40) for _ in range(30)]


def _write_owt(folder, docs, formats):
    folder.mkdir(parents=True, exist_ok=True)
    parts = np.array_split(np.arange(len(docs)), len(formats))
    for k, (fmt, ix) in enumerate(zip(formats, parts)):
        chunk = [docs[i] for i in ix]
        if fmt == "jsonl":
            (folder / f"{k:02d}.jsonl").write_text("".join(json.dumps({"text": t, "id": 1}) + "\n" for t in chunk))
        elif fmt == "txt":
            sub = folder / f"{k:02d}"
            sub.mkdir()
            for j, t in enumerate(chunk):
                (sub / f"doc{j:03d}.txt").write_text(t, encoding="utf-8")
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table({"text": chunk}), folder / f"{k:02d}.parquet", row_group_size=4)


@pytest.mark.parametrize("formats", [("jsonl",), ("txt",), ("jsonl", "txt"), ("parquet", "jsonl")])
def test_owt_local_folder(formats, owt_docs, tmp_path, monkeypatch):
    if "parquet" in formats:
        pytest.importorskip("pyarrow")
    folder = tmp_path / "owt"
    _write_owt(folder, owt_docs, formats)
    cache = tmp_path / "cache"
    c = data.load_corpus(f"owt:{folder}", None, cache_dir=cache)
    # 30 documents (< 200): the last 5% (2) held out, "\n\n"-separated bytes
    assert c.decode(c.train) == "".join(d + "\n\n" for d in owt_docs[:-2])
    assert c.decode(c.val) == "".join(d + "\n\n" for d in owt_docs[-2:])
    assert c.vocab_size == 256 and "openwebtext" in c.description
    assert isinstance(c.train, np.memmap)  # cached on disk, memory-mapped
    # the environment variable names the folder too; BPE with <|endoftext|> between documents
    monkeypatch.setenv(corpus_files.OWT_ENV, str(folder))
    b = data.load_corpus("owt", None, tokenizer="bpe", vocab=300, cache_dir=cache)
    assert b.decode(b.val) == "".join(d + bpe.EOT for d in owt_docs[-2:])
    assert b.decode(b.train).count(bpe.EOT) == len(owt_docs) - 2


def test_owt_every_200th_document_held_out(tmp_path):
    rng = np.random.default_rng(2)
    docs = [f"doc {i} " + _doc(rng, 3) for i in range(450)]
    _write_owt(tmp_path / "owt", docs, ("jsonl",))
    c = data.load_corpus(f"owt:{tmp_path / 'owt'}", None, cache_dir=tmp_path / "cache")
    assert c.decode(c.val) == docs[199] + "\n\n" + docs[399] + "\n\n"
    capped = data.load_corpus(f"owt:{tmp_path / 'owt'}", 300, cache_dir=tmp_path / "cache")
    assert len(capped.train) + len(capped.val) < 400


def test_owt_missing_folder_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv(corpus_files.OWT_ENV, raising=False)
    with pytest.raises(ValueError, match=r"owt.*STYLIZED_OWT_DIR"):
        data.load_corpus("owt")
    with pytest.raises(ValueError, match="not a folder"):
        data.load_corpus(f"owt:{tmp_path / 'nowhere'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .*files"):
        data.load_corpus(f"owt:{tmp_path / 'empty'}")


def test_train_with_bpe(text_dir, tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from simulations.transformer.model.presets import Preset
    from simulations.transformer.train.loop import train

    torch.set_num_threads(1)
    monkeypatch.setenv("STYLIZED_DATA_CACHE", str(tmp_path / "cache"))
    config = Preset.from_name("smoke", variant="learned-qk", steps=2, data=str(text_dir), tokenizer="bpe", bpe_vocab=300)
    info = train(config, ckpt=tmp_path / "m.pt", progress=False, device="cpu")
    ck = torch.load(tmp_path / "m.pt", weights_only=True)
    assert ck["train_config"]["tokenizer"] == "bpe" and ck["model_config"]["vocab_size"] > 256
    assert data.corpus_for(ck["train_config"]).description == info["corpus"]
