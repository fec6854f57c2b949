"""Bad corpora: one line naming ``--data``, exit 2, no traceback, no work done.

OpenWebText jsonl records without a ``text`` string or not UTF-8, parquet / arrow without pyarrow, an unusable
token cache (rebuilt), a corpus shorter than one block, a held-out split shorter than the evaluation window.
Helpers: ``_faults.py``.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from simulations.transformer.data import corpus as tdata  # noqa: E402
from tests.transformer._faults import _assert_refused, _one_line_refusal, _run  # noqa: E402

# ---------------------------------------------------------------------------------------------------------
# corpora: OpenWebText records, parquet without pyarrow, a corpus shorter than one block
# ---------------------------------------------------------------------------------------------------------
JSONL = {"no-text": ('{"title": "a"}\n', "no 'text' field"), "text-number": ('{"text": 5}\n', "JSON number"),
         "text-null": ('{"text": null}\n', "JSON null"), "text-list": ('{"text": ["a"]}\n', "JSON array"),
         "array-line": ('[1, 2]\n', "JSON array, not an object"), "number-line": ('3\n', "JSON number, not"),
         "string-line": ('"doc"\n', "JSON string, not"), "not-json": ('{"text": "a\n', "is not JSON"),
         "truncated": ('{"text": "ab', "is not JSON")}


@pytest.mark.parametrize("kind", sorted(JSONL))
def test_owt_jsonl_records_are_checked(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("STYLIZED_DATA_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "owt"
    folder.mkdir()
    good_lines = "".join(json.dumps({"text": f"document {i}"}) + "\n" for i in range(3))
    content, why = JSONL[kind]
    (folder / "a.jsonl").write_text(good_lines + "\n" + content, encoding="utf-8")
    _one_line_refusal(lambda: tdata.load_corpus(f"owt:{folder}", None), "--data:", str(folder / "a.jsonl"),
                      "line 5", why)
    assert not any(p.name.count(".tmp") for p in (tmp_path / "cache").iterdir())  # no half-written token files


def test_owt_jsonl_not_utf8(tmp_path, monkeypatch):
    monkeypatch.setenv("STYLIZED_DATA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "owt").mkdir()
    (tmp_path / "owt" / "a.jsonl").write_bytes(b'{"text": "ok"}\n{"text": "\xff\xfe"}\n')
    _one_line_refusal(lambda: tdata.load_corpus(f"owt:{tmp_path / 'owt'}", None), "--data:", "line 2", "UTF-8")


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_owt_table_without_pyarrow_names_the_extra(suffix, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow → ImportError, installed or not
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    monkeypatch.setenv("STYLIZED_DATA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "owt").mkdir()
    (tmp_path / "owt" / f"a{suffix}").write_bytes(b"PAR1 not really")
    _one_line_refusal(lambda: tdata.load_corpus(f"owt:{tmp_path / 'owt'}", None), "--data:",
                      'install the "owt" extra (pip install stylized[owt])')
    rc, err, _ = _run(["transformer", "train", "--variant", "rope", "--data", f"owt:{tmp_path / 'owt'}",
                       "--results-dir", str(tmp_path / "r"), "--steps", "1", "--threads", "1"], capsys)
    _assert_refused(rc, err, "--data:", "stylized[owt]")


def test_owt_bad_record_via_the_cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STYLIZED_DATA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "owt").mkdir()
    (tmp_path / "owt" / "a.jsonl").write_text('{"text": "one"}\n{"body": "two"}\n')
    rc, err, _ = _run(["transformer", "train", "--variant", "rope", "--data", f"owt:{tmp_path / 'owt'}",
                       "--results-dir", str(tmp_path / "r"), "--steps", "1", "--threads", "1"], capsys)
    _assert_refused(rc, err, "--data:", "a.jsonl line 2", "'text'")
    assert not (tmp_path / "r" / "checkpoints" / "smoke" / "rope.pt").exists()


def test_owt_unusable_token_cache_is_rebuilt(tmp_path, monkeypatch, capsys):
    (tmp_path / "owt").mkdir()
    (tmp_path / "owt" / "a.jsonl").write_text("".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(5)))
    first = tdata.load_corpus(f"owt:{tmp_path / 'owt'}", None, cache_dir=tmp_path / "cache")
    meta = next((tmp_path / "cache").glob("owt-*.json"))
    for text in ("[1]", "{", json.dumps({**json.loads(meta.read_text()), "val": {"file": "../x", "n": 3}})):
        meta.write_text(text)
        capsys.readouterr()
        again = tdata.load_corpus(f"owt:{tmp_path / 'owt'}", None, cache_dir=tmp_path / "cache")
        assert np.array_equal(again.train, first.train) and np.array_equal(again.val, first.val)
        assert "unusable token cache" in capsys.readouterr().err


@pytest.mark.parametrize("size", [0, 1, 10, 16])  # 16 bytes + "\n\n", 95% trained: 17 < 18
def test_corpus_shorter_than_a_block(size, tmp_path, capsys):
    text = tmp_path / "tiny.txt"
    text.write_bytes(b"x" * size)
    rc, err, _ = _run(["transformer", "train", "--variant", "rope", "--data", str(text), "--results-dir",
                       str(tmp_path / "r"), "--steps", "1", "--threads", "1"], capsys)
    _assert_refused(rc, err, "--data:", str(text), "training tokens", "block of 16")
    assert not (tmp_path / "r" / "checkpoints" / "smoke" / "rope.pt").exists()


def test_compare_checks_the_held_out_split_before_training(tmp_path, capsys):
    text = tmp_path / "short.txt"
    text.write_bytes(bytes(range(256)) * 4)  # 1024 bytes: trainable, but 5% held out < the 4×16-token window
    rc, err, _ = _run(["transformer", "compare", "--variants", "nope", "--seeds", "0", "--data", str(text),
                       "--results-dir", str(tmp_path / "r"), "--steps", "1", "--threads", "1"], capsys)
    _assert_refused(rc, err, "--data:", "validation")
    assert not list((tmp_path / "r").rglob("*.pt"))


@pytest.mark.parametrize("docs", [[], ["only one"], [""]])
def test_owt_with_fewer_than_two_documents_names_data(docs, tmp_path, monkeypatch):
    """Found by the slow fuzz: a plain ValueError (``data='owt': …``), not a refusal naming ``--data``."""
    monkeypatch.setenv("STYLIZED_DATA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "owt").mkdir()
    (tmp_path / "owt" / "a.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs) or "\n")
    _one_line_refusal(lambda: tdata.load_corpus(f"owt:{tmp_path / 'owt'}", None), "--data:", "need at least 2")


@pytest.mark.parametrize("where", ["missing", "empty-folder", "owt-not-a-folder"])
def test_data_paths_name_data(where, tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    spec = {"missing": str(tmp_path / "nope.txt"), "empty-folder": str(tmp_path / "empty"),
            "owt-not-a-folder": f"owt:{tmp_path / 'nope'}"}[where]
    monkeypatch.setenv("STYLIZED_DATA_CACHE", str(tmp_path / "cache"))
    _one_line_refusal(lambda: tdata.load_corpus(spec, None), "--data:")
