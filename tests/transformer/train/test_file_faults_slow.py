"""The slow, scaled file-fault fuzz (``make fuzz``): the strategies of ``test_file_faults_{checkpoints,caches,
corpora}`` with ``$STYLIZED_FUZZ_EXAMPLES`` inputs (default 10,000, split by ``_faults.SHARE``; the destinations
and cross-option contradictions are in ``test_file_faults_slow_options``).

Contract per input: the loader or the command refuses with one line naming the option / file (exit 2, no
traceback, no work done, nothing written over), or accepts a file that is still good; a malformed cache is a
miss. Anything else (another exception, a hang, NaN) is a hard failure, counted in ``_faults.FAILED`` and
reported (``pytest -s``; ``$STYLIZED_FUZZ_REPORT``) like ``tests/cli/test_fuzz_cli.py``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from simulations.transformer.data import corpus as tdata  # noqa: E402
from simulations.transformer.evaluate.extrapolation import EVAL_FIELDS, eval_cache_path, read_loss_cache  # noqa: E402
from simulations.transformer.paths import checkpoint_path  # noqa: E402
from simulations.transformer.train.checkpoints import read_checkpoint  # noqa: E402
from simulations.transformer.train.loop import check_corpus, load_model  # noqa: E402
from tests._shared import report_fuzz  # noqa: E402
from tests.transformer import _faults  # noqa: E402
from tests.transformer._faults import (  # noqa: E402
    _assert_refused,
    _run,
    counted,
    refused_or_intact,
    refused_or_none,
    slow,
)
from tests.transformer.train.test_file_faults_caches import GARBAGE, _garbage, _good_cache  # noqa: E402
from tests.transformer.train.test_file_faults_checkpoints import FOREIGN_OBJECTS, MUTATIONS, _mutated  # noqa: E402

pytestmark = pytest.mark.slow

# JSON-like values of every kind (kept small: a config field never asks for a huge model)
JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-3, 70) | st.floats(allow_nan=True)
                       | st.text(max_size=8), lambda c: st.lists(c, max_size=3)
                       | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=6)
CK_KEYS = ("model", "model_config", "step", "variant", "train_config", "history", "optimizer", "rng", "preset",
           "corpus")


@pytest.fixture
def scratch(tmp_path):
    """A fresh folder per Hypothesis example (``tmp_path`` is shared by the examples of one test)."""
    made: list[Path] = []

    def new() -> Path:
        made.append(Path(tempfile.mkdtemp(dir=tmp_path)))
        return made[-1]

    yield new
    for p in made:
        shutil.rmtree(p, ignore_errors=True)


def _refused_checkpoint(p: Path, resume: bool = False) -> None:
    fn = (lambda: read_checkpoint(p, "cpu", resume=True)) if resume else (lambda: load_model(p, "cpu"))
    assert refused_or_none(fn, "checkpoint:", str(p)) is None, "a corrupt checkpoint was accepted"


# ---------------------------------------------------------------------------------------------------------
# checkpoints: the loader
# ---------------------------------------------------------------------------------------------------------
@slow("checkpoint bytes")
@given(content=st.binary(max_size=4096) | st.binary(max_size=2048).map(lambda b: b"PK\x03\x04" + b)
       | st.binary(max_size=2048).map(lambda b: b"\x80\x02" + b), resume=st.booleans())
def test_slow_random_bytes(content, resume, scratch):
    p = scratch() / "rope.pt"
    p.write_bytes(content)
    counted("checkpoint bytes", _refused_checkpoint, p, resume)


@slow("checkpoint truncated")
@given(frac=st.floats(0, 1, exclude_max=True), tail=st.binary(max_size=64), resume=st.booleans())
def test_slow_truncated(frac, tail, resume, good_bytes, good_ck, scratch):
    """Truncated at any offset, with or without garbage after the cut."""
    content = good_bytes[: int(frac * len(good_bytes))] + tail
    p = scratch() / "rope.pt"
    p.write_bytes(content)
    if tail:  # garbage over the end-of-archive record may leave every entry intact: refused, or the weights exact
        counted("checkpoint truncated", _flipped, p, good_ck)
    else:
        counted("checkpoint truncated", _refused_checkpoint, p, resume)


_flipped = refused_or_intact  # a harmless flip: the weights exactly as saved


@slow("checkpoint bit flips")
@given(positions=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=16),
       bits=st.integers(0, 7))
def test_slow_bit_flips(positions, bits, good_bytes, good_ck, scratch):
    b = bytearray(good_bytes)
    for f in positions:
        i = int(f * len(b))
        b[i] ^= 1 << ((i + bits) % 8)
    p = scratch() / "rope.pt"
    p.write_bytes(bytes(b))
    counted("checkpoint bit flips", _flipped, p, good_ck)


def _entries(good_ck: dict, hows: list[str], edits: list[tuple[str, object]]) -> dict:
    ck = dict(good_ck)
    for how in hows:
        try:
            ck = _mutated(ck, how)
        except (KeyError, TypeError, StopIteration, AttributeError):  # an earlier mutation removed what it edits
            pass
    for key, value in edits:
        ck[key] = value
    return ck


def _entries_case(p: Path, ck: dict, resume: bool, broken: bool, good_ck: dict) -> None:
    fn = (lambda: read_checkpoint(p, "cpu", resume=True)) if resume else (lambda: load_model(p, "cpu"))
    got = refused_or_none(fn, "checkpoint:", str(p))
    if broken:
        assert got is None, "a broken checkpoint was accepted"


@slow("checkpoint entries")
@given(hows=st.lists(st.sampled_from(MUTATIONS), max_size=3),
       edits=st.lists(st.tuples(st.sampled_from(CK_KEYS), JSONISH), max_size=3),
       foreign=st.none() | st.sampled_from(sorted(FOREIGN_OBJECTS)), resume=st.booleans())
def test_slow_wrong_entries(hows, edits, foreign, resume, good_ck, scratch):
    """Mutations combined, any entry replaced by any JSON-like value, foreign objects: refused or still good."""
    ck = FOREIGN_OBJECTS[foreign] if foreign else _entries(good_ck, hows, edits)
    p = scratch() / "rope.pt"
    torch.save(ck, p)
    broken = foreign is not None or (bool(hows) and not edits and not resume)  # an edit may repair a mutation;
    # read_checkpoint(resume=True) checks the entries only (shapes: load_weights), so a shape mutation may pass it
    counted("checkpoint entries", _entries_case, p, ck, resume, broken, good_ck)


# ---------------------------------------------------------------------------------------------------------
# the commands that read a checkpoint: eval, train --resume, probe (refused before any work, nothing written)
# ---------------------------------------------------------------------------------------------------------
def _bad_bytes(kind: str, data, good_bytes: bytes, good_ck: dict) -> bytes | dict:
    if kind == "truncated":
        return good_bytes[: data.draw(st.integers(0, len(good_bytes) - 1))]
    if kind == "random":
        return data.draw(st.binary(max_size=4096))
    if kind == "mutation":
        return _mutated(good_ck, data.draw(st.sampled_from([m for m in MUTATIONS if m != "train-config-list"])))
    return FOREIGN_OBJECTS[data.draw(st.sampled_from(sorted(FOREIGN_OBJECTS)))]


def _command_case(argv: list[str], path: Path, flag: str, capsys) -> None:
    before = path.read_bytes()
    rc, err, _ = _run(argv, capsys)
    _assert_refused(rc, err, flag, str(path))
    assert path.read_bytes() == before  # nothing written over it
    assert not eval_cache_path(path).exists()


@slow("commands x checkpoints")
@given(data=st.data(), command=st.sampled_from(["eval", "resume", "probe"]),
       kind=st.sampled_from(["truncated", "random", "mutation", "foreign"]), seed=st.integers(0, 2**32 - 1))
def test_slow_commands_refuse_bad_checkpoints(data, command, kind, seed, good_bytes, good_ck, scratch, capsys):
    root = scratch()
    path = checkpoint_path("smoke", "rope", seed, root)
    path.parent.mkdir(parents=True)
    content = _bad_bytes(kind, data, good_bytes, good_ck)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        torch.save(content, path)
    s = ["--seed", str(seed), "--results-dir", str(root), "--threads", "1"]
    argv = {"eval": ["transformer", "eval", "--variant", "rope", *s],
            "resume": ["transformer", "train", "--variant", "rope", "--resume", "--steps", "3", *s],
            "probe": ["transformer", "probe", str(path), "--threads", "1", "--seed", str(seed % 1000)]}[command]
    counted("commands x checkpoints", _command_case, argv, path,
            "--resume:" if command == "resume" else "checkpoint:", capsys)


# ---------------------------------------------------------------------------------------------------------
# evaluation caches: a hit of finite numbers or a miss, never a crash
# ---------------------------------------------------------------------------------------------------------
def _cache_case(path: Path, key: dict) -> None:
    got = read_loss_cache(path, key, fields=EVAL_FIELDS)
    assert got is None or all(np.isfinite(v).all() and (v >= 0).all() for d in got.values() for v in d.values())


@slow("cache text")
@given(text=st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("latin-1"))
       | JSONISH.map(json.dumps))
def test_slow_any_cache_text(text, scratch):
    path = scratch() / "c.json"
    path.write_text(text, encoding="utf-8")
    counted("cache text", _cache_case, path, _good_cache()["key"])


def _edit(obj, route: list, value):
    """``obj`` with the entry at ``route`` (keys/indices taken modulo what is there) replaced by ``value``."""
    if not route:
        return value
    if isinstance(obj, dict) and obj:
        k = sorted(obj)[route[0] % len(obj)]
        return {**obj, k: _edit(obj[k], route[1:], value)}
    if isinstance(obj, list) and obj:
        i = route[0] % len(obj)
        return [*obj[:i], _edit(obj[i], route[1:], value), *obj[i + 1:]]
    return value


@slow("cache garbage")
@given(how=st.none() | st.sampled_from(GARBAGE), route=st.lists(st.integers(0, 50), max_size=5),
       value=JSONISH | st.sampled_from([float("nan"), float("inf"), -1.0, 1e308, True, [], {}]))
def test_slow_cache_garbage(how, route, value, scratch):
    """A good cache with any one entry replaced by any value (NaN and inf included), or a named garbage."""
    saved = _good_cache()
    bad = _garbage(saved, how) if how else _edit(saved, route, value)
    path = scratch() / "c.json"
    path.write_text(json.dumps(bad, allow_nan=True))
    counted("cache garbage", _cache_case, path, saved["key"])


# ---------------------------------------------------------------------------------------------------------
# corpora: OpenWebText jsonl records of any shape, text files of any bytes and length
# ---------------------------------------------------------------------------------------------------------
LINES = (st.text(max_size=40).map(lambda t: json.dumps({"text": t})) | JSONISH.map(json.dumps)
         | st.text(max_size=20) | st.dictionaries(st.sampled_from(["text", "title", "url"]), JSONISH,
                                                   max_size=3).map(json.dumps))


def _corpus_case(data: str, cache: Path) -> None:
    corpus = refused_or_none(lambda: tdata.load_corpus(data, None, cache_dir=cache), "--data:")
    if corpus is not None:
        assert len(corpus.train) > 0 and corpus.vocab_size >= 256
        refused_or_none(lambda: check_corpus(corpus, 16), "--data:")
    assert not list(cache.glob("*.tmp")) if cache.exists() else True  # no half-written token files


@slow("corpus jsonl")
@given(lines=st.lists(LINES, min_size=1, max_size=8), raw=st.binary(max_size=40), files=st.integers(1, 2))
def test_slow_owt_records(lines, raw, files, scratch):
    root = scratch()
    folder = root / "owt"
    folder.mkdir()
    for i in range(files):
        (folder / f"p{i}.jsonl").write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
                                             + (raw if i else b""))
    counted("corpus jsonl", _corpus_case, f"owt:{folder}", root / "cache")


@slow("corpus text")
@given(content=st.binary(max_size=3000) | st.integers(0, 3000).map(lambda n: b"x" * n), folder=st.booleans())
def test_slow_text_corpora(content, folder, scratch):
    """A text file (or a folder of one) of any bytes and length: a corpus, or one line naming ``--data``."""
    root = scratch()
    p = root / "t" / "a.txt" if folder else root / "a.txt"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(content)
    counted("corpus text", _corpus_case, str(p.parent if folder else p), root / "cache")


def teardown_module(module) -> None:
    report_fuzz("file faults", {k: v for k, v in _faults.TRIED.items() if k in _KINDS},
                {k: v for k, v in _faults.FAILED.items() if k in _KINDS})


_KINDS = ("checkpoint bytes", "checkpoint truncated", "checkpoint bit flips", "checkpoint entries",
          "commands x checkpoints", "cache text", "cache garbage", "corpus jsonl", "corpus text")
