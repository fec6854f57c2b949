"""Token corpora for the transformer experiments.

Three sources (``--data``):

``builtin`` (default, offline)
    The source text of the running Python's standard library: every ``*.py``
    file under ``sysconfig.get_paths()["stdlib"]``, excluding ``site-packages``
    and test directories (``test``, ``tests``, ``idle_test``), in sorted path
    order, concatenated (each file followed by a NUL-free ``\\n\\n`` separator)
    until a cap of ``max_bytes`` (8 MB by default: with CPython 3.11.7 that is
    558 files, 8,000,002 bytes; train 7,386,908 / validation 613,094 bytes).
    Tokens are raw bytes (vocab 256).  The held-out split is the last 5% of the
    *files* (fixed, deterministic: 28 files, the tail of the sorted list), so
    validation text comes from modules never seen in training.
``PATH``
    Any text file, or a folder: all ``*.txt``, ``*.py`` and ``*.md`` files
    below it, sorted; byte tokens, last 5% of files (at least one when there
    are several; otherwise the last 5% of bytes) held out.
``owt``
    OpenWebText through HuggingFace ``datasets`` with the GPT-2 BPE
    (``tiktoken``, or ``transformers``' tokenizer as fallback).  Needs the
    network and those packages; a clear error is raised otherwise.
"""

from __future__ import annotations

import os
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_MAX_BYTES = 8_000_000
HELDOUT_FRACTION = 0.05
TEXT_SUFFIXES = (".txt", ".py", ".md")
_EXCLUDE_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}


@dataclass
class Corpus:
    """Train/validation token streams.

    Attributes
    ----------
    train, val : np.ndarray
        1-D integer token arrays.
    vocab_size : int
    description : str
        Human-readable provenance (source, number of files, bytes).
    """

    train: np.ndarray
    val: np.ndarray
    vocab_size: int
    description: str


def stdlib_files(root: str | os.PathLike | None = None) -> list[Path]:
    """Sorted ``*.py`` files of the standard library, without site-packages and tests."""
    root = Path(root or sysconfig.get_paths()["stdlib"])
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _EXCLUDE_DIRS)
        for f in filenames:
            if f.endswith(".py"):
                out.append(Path(dirpath) / f)
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def text_files(path: str | os.PathLike) -> list[Path]:
    """A single file, or all ``*.txt/*.py/*.md`` files under a folder (sorted)."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise ValueError(f"data={str(path)!r} is not one of: builtin, owt, an existing file/folder")
    files = sorted(
        (f for f in p.rglob("*") if f.is_file() and f.suffix in TEXT_SUFFIXES),
        key=lambda f: f.relative_to(p).as_posix(),
    )
    if not files:
        raise ValueError(f"data={str(path)!r}: no *.txt/*.py/*.md files found")
    return files


def _bytes_corpus(files: list[Path], max_bytes: int, label: str) -> Corpus:
    chunks: list[bytes] = []
    total = 0
    for f in files:
        if total >= max_bytes:
            break
        b = f.read_bytes()[: max_bytes - total] + b"\n\n"
        chunks.append(b)
        total += len(b)
    n_val = int(round(len(chunks) * HELDOUT_FRACTION))
    if len(chunks) > 1:
        n_val = max(1, n_val)
        train_b, val_b = b"".join(chunks[:-n_val]), b"".join(chunks[-n_val:])
    else:
        data = chunks[0]
        cut = int(len(data) * (1 - HELDOUT_FRACTION))
        train_b, val_b = data[:cut], data[cut:]
    train = np.frombuffer(train_b, dtype=np.uint8).copy()
    val = np.frombuffer(val_b, dtype=np.uint8).copy()
    desc = (
        f"{label}: {len(chunks)} files, {total} bytes (train {len(train)}, "
        f"val {len(val)} bytes), byte-level vocab 256"
    )
    return Corpus(train, val, 256, desc)


def load_builtin(max_bytes: int = DEFAULT_MAX_BYTES, root: str | None = None) -> Corpus:
    """The offline stdlib-source corpus (see module docstring)."""
    return _bytes_corpus(stdlib_files(root), max_bytes, "python-stdlib source")


def load_path(path: str | os.PathLike, max_bytes: int = 10**12) -> Corpus:
    """Byte-level corpus from a text file or folder."""
    return _bytes_corpus(text_files(path), max_bytes, f"text at {path}")


def _bpe_tokenizer():
    """GPT-2 BPE ``encode`` function and vocab size (tiktoken, else transformers)."""
    try:
        import tiktoken

        enc = tiktoken.get_encoding("gpt2")
        return (lambda s: enc.encode_ordinary(s)), enc.n_vocab
    except ImportError:
        pass
    try:
        from transformers import GPT2TokenizerFast

        tok = GPT2TokenizerFast.from_pretrained("gpt2")
        return (lambda s: tok(s)["input_ids"]), tok.vocab_size
    except ImportError as e:
        raise ImportError(
            "--data owt needs a GPT-2 BPE tokenizer: pip install tiktoken (or transformers)"
        ) from e


def load_owt(max_docs: int = 200_000, val_docs: int | None = None) -> Corpus:
    """OpenWebText via HuggingFace ``datasets`` (streamed), GPT-2 BPE tokens.

    The first ``max_docs`` documents are tokenised (EOT-separated); the last
    ``val_docs`` (default 0.5%) are held out.
    """
    try:
        import datasets
    except ImportError as e:
        raise ImportError("--data owt needs the 'datasets' package: pip install datasets") from e
    encode, vocab = _bpe_tokenizer()
    ds = datasets.load_dataset("openwebtext", split="train", streaming=True)
    docs = []
    for i, ex in enumerate(ds):
        if i >= max_docs:
            break
        docs.append(ex["text"])
    if not docs:
        raise ValueError("data='owt': the dataset returned no documents")
    n_val = val_docs if val_docs is not None else max(1, len(docs) // 200)
    n_val = min(n_val, max(1, len(docs) - 1))
    eot = vocab - 1  # GPT-2's <|endoftext|> is the last id (50256)

    def tok(block: list[str]) -> np.ndarray:
        ids: list[int] = []
        for d in block:
            ids.extend(encode(d))
            ids.append(eot)
        return np.asarray(ids, dtype=np.int64 if vocab > 65535 else np.uint16)

    train, val = tok(docs[:-n_val]), tok(docs[-n_val:])
    desc = f"openwebtext: {len(docs)} docs, train {len(train)} / val {len(val)} BPE tokens"
    return Corpus(train, val, vocab, desc)


def load_corpus(data: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> Corpus:
    """Dispatch on ``--data``: ``None``/``"builtin"``, ``"owt"``, or a path."""
    if data in (None, "", "builtin"):
        return load_builtin(max_bytes)
    if data == "owt":
        return load_owt()
    return load_path(data)
