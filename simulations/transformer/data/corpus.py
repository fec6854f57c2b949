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
``owt`` (or ``owt:FOLDER``)
    A *local* copy of OpenWebText: a folder (``FOLDER``, else ``$STYLIZED_OWT_DIR``) of
    ``*.parquet`` / ``*.arrow`` (HuggingFace ``datasets`` cache files) / ``*.jsonl`` files with
    a ``text`` column or field, or ``*.txt`` files of one document each; read in sorted path
    order, streamed, never downloaded.  Every 200th document (0.5%) is held out (with fewer
    than 200 documents: the last 5%, at least one).  Documents are separated by ``\n\n``
    (bytes) or ``<|endoftext|>`` (BPE).  ``max_bytes`` caps the text read (``None``: all).
    The token arrays are cached on disk (memory-mapped), see :mod:`.tokenizer`.

Tokenizers (``tokenizer=``): ``"bytes"`` (vocab 256, the default) or ``"bpe"``: a byte-level
BPE of ``vocab`` tokens trained locally on the training split (:mod:`.tokenizer`; 4,096 for
the cpu preset, 32,768 for the paper preset), cached next to the corpus cache and keyed by
the corpus description, its content and the vocabulary size.  Text is decoded as UTF-8 for
BPE (invalid bytes become U+FFFD).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stylized.core.errors import InvalidInput

from . import tokenizer as bpe
from .corpus_files import owt_dir, owt_files, owt_split, read_split, stdlib_files, text_files

DEFAULT_MAX_BYTES = 8_000_000
TOKENIZERS = ("bytes", "bpe")
DEFAULT_BPE_VOCAB = 4096
#: text the OpenWebText BPE is trained on (the first training documents)
OWT_BPE_TRAIN_BYTES = 500_000_000


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
    tokenizer : str
        ``"bytes"`` or ``"bpe"``.
    tokenizer_file : str, optional
        The cached BPE (``tokenizer="bpe"``).
    """

    train: np.ndarray
    val: np.ndarray
    vocab_size: int
    description: str
    tokenizer: str = "bytes"
    tokenizer_file: str | None = None

    def decode(self, ids) -> str:
        """Text of token ids (bytes decoded as UTF-8 with replacement)."""
        if self.tokenizer == "bpe":
            return bpe.decode(bpe.load_bpe(self.tokenizer_file), ids)
        return np.asarray(ids, dtype=np.uint8).tobytes().decode("utf-8", errors="replace")


def _bytes_corpus(files: list[Path], max_bytes: int, label: str) -> Corpus:
    train_c, val_c, total, n_files = read_split(files, max_bytes)
    train = np.frombuffer(b"".join(train_c), dtype=np.uint8).copy()
    val = np.frombuffer(b"".join(val_c), dtype=np.uint8).copy()
    desc = (
        f"{label}: {n_files} files, {total} bytes (train {len(train)}, "
        f"val {len(val)} bytes), byte-level vocab 256"
    )
    return Corpus(train, val, 256, desc)


def _bpe_corpus(files: list[Path], max_bytes: int, label: str, vocab: int,
                cache_dir: str | os.PathLike | None) -> Corpus:
    """The same split as :func:`_bytes_corpus`, tokenised with a cached byte-level BPE."""
    base = _bytes_corpus(files, max_bytes, label)
    train_c, val_c, _, _ = read_split(files, max_bytes)
    fingerprint = hashlib.sha256(base.train.tobytes() + b"\0" + base.val.tobytes()).hexdigest()
    key = bpe.cache_key(base.description, fingerprint, vocab)
    root = bpe.cache_dir(cache_dir)
    train_t = [c.decode("utf-8", errors="replace") for c in train_c]
    tok, path, hit = bpe.get_bpe(train_t, vocab, key, root)
    arrays = root / f"tokens-{key}.npz"
    cached = _cached_tokens(arrays, tok.get_vocab_size()) if hit else None  # a retrained tokenizer: re-encode
    if cached is not None:
        train, val = cached
    else:
        train = bpe.encode(tok, train_t)
        val = bpe.encode(tok, [c.decode("utf-8", errors="replace") for c in val_c])
        tmp = arrays.with_name(arrays.stem + f".tmp{os.getpid()}.npz")
        np.savez(tmp, train=train, val=val)
        os.replace(tmp, arrays)
    v = tok.get_vocab_size()
    desc = base.description.replace(
        ", byte-level vocab 256", f"; byte-level BPE vocab {v} (train {len(train)}, val {len(val)} tokens)")
    return Corpus(train, val, v, desc, "bpe", str(path))


def _cached_tokens(arrays: Path, vocab: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The cached token ids (train, val) in ``arrays``, or ``None`` (missing; or unusable: one line naming it, and
    the caller encodes again): two non-empty 1-D integer arrays of ids below ``vocab``, nothing else."""
    if not arrays.exists():
        return None
    try:
        with np.load(arrays, allow_pickle=False) as z:
            if sorted(z.files) != ["train", "val"]:
                raise ValueError(f"it holds {', '.join(sorted(z.files)[:4]) or 'nothing'}, not train and val")
            out = z["train"], z["val"]
        for name, a in zip(("train", "val"), out):
            if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "ui":
                raise ValueError(f"{name} is a {a.dtype} array of shape {a.shape}, not a non-empty list of token ids")
            if int(a.min()) < 0 or int(a.max()) >= vocab:
                raise ValueError(f"{name} holds ids outside [0, {vocab})")
    except Exception as e:  # np.load raises many types on a damaged archive (BadZipFile, EOFError, OSError…)
        import sys

        why = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        print(f"[data] {arrays}: unusable token cache ({why}); encoding again", file=sys.stderr, flush=True)
        return None
    return out


def _corpus(files: list[Path], max_bytes: int, label: str, tokenizer: str, vocab: int | None,
            cache_dir: str | os.PathLike | None) -> Corpus:
    if tokenizer == "bytes":
        return _bytes_corpus(files, max_bytes, label)
    return _bpe_corpus(files, max_bytes, label, vocab or DEFAULT_BPE_VOCAB, cache_dir)


def load_builtin(max_bytes: int = DEFAULT_MAX_BYTES, root: str | None = None, tokenizer: str = "bytes",
                 vocab: int | None = None, cache_dir: str | os.PathLike | None = None) -> Corpus:
    """The offline stdlib-source corpus (see module docstring)."""
    return _corpus(stdlib_files(root), max_bytes, "python-stdlib source", tokenizer, vocab, cache_dir)


def load_path(path: str | os.PathLike, max_bytes: int = 10**12, tokenizer: str = "bytes",
              vocab: int | None = None, cache_dir: str | os.PathLike | None = None) -> Corpus:
    """Corpus from a text file or folder."""
    return _corpus(text_files(path), max_bytes, f"text at {path}", tokenizer, vocab, cache_dir)


# ---------------------------------------------------------------------------
# OpenWebText, local files only: tokenised once into memory-mapped arrays (reading: .corpus_files)
# ---------------------------------------------------------------------------


def load_owt(path: str | os.PathLike | None = None, max_bytes: int | None = None, tokenizer: str = "bytes",
             vocab: int | None = None, cache_dir: str | os.PathLike | None = None,
             batch_docs: int = 2000) -> Corpus:
    """A local OpenWebText copy, tokenised once into memory-mapped arrays in the cache folder."""
    root = owt_dir(path)
    files = owt_files(root)
    vocab = vocab or DEFAULT_BPE_VOCAB
    sig = [(f.relative_to(root).as_posix(), f.stat().st_size, f.stat().st_mtime_ns) for f in files]
    key = bpe.cache_key("owt", str(root.resolve()), sig, max_bytes, tokenizer,
                        vocab if tokenizer == "bpe" else 256)
    cache = bpe.cache_dir(cache_dir)
    meta_path = cache / f"owt-{key}.json"
    meta = _owt_meta(meta_path, cache)
    if meta is None:  # missing, or unusable (then rebuilt)
        _build_owt(files, max_bytes, tokenizer, vocab, key, cache, batch_docs, root)
        meta = _owt_meta(meta_path, cache)
        if meta is None:
            raise RuntimeError(f"{meta_path}: the OpenWebText token cache just written does not read back")
    arr = {s: np.memmap(cache / meta[s]["file"], dtype=meta["dtype"], mode="r", shape=(meta[s]["n"],))
           for s in ("train", "val")}
    return Corpus(arr["train"], arr["val"], meta["vocab"], meta["description"], tokenizer,
                  meta.get("tokenizer_file"))


def _owt_meta(meta_path: Path, cache: Path) -> dict | None:
    """The OpenWebText token cache's metadata when it and its token files are whole, else ``None``."""
    if not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        dtype = np.dtype(meta["dtype"])
        for s in ("train", "val"):
            f, n = cache / meta[s]["file"], meta[s]["n"]
            if Path(meta[s]["file"]).name != meta[s]["file"] or f.stat().st_size != n * dtype.itemsize:
                raise ValueError(f"{f.name} does not hold {n} tokens")
        if not (isinstance(meta["vocab"], int) and isinstance(meta["description"], str)):
            raise ValueError("no vocab or description")
    except (OSError, ValueError, KeyError, TypeError) as e:
        import sys

        print(f"[data] {meta_path}: unusable token cache ({type(e).__name__}); rebuilding it", file=sys.stderr,
              flush=True)
        return None
    return meta


def _build_owt(files, max_bytes, tokenizer, vocab, key, cache, batch_docs, root) -> None:
    tok, tok_path = None, None
    if tokenizer == "bpe":
        def sample() -> Iterator[str]:
            seen = 0
            for doc, held in owt_split(files, max_bytes):
                if not held:
                    yield doc
                    seen += len(doc)
                    if seen >= OWT_BPE_TRAIN_BYTES:
                        return
        tok, tok_path, _ = bpe.get_bpe(sample(), vocab, key, cache)
    v = tok.get_vocab_size() if tok is not None else 256
    dtype = bpe.token_dtype(v)
    tmp = {s: cache / f"owt-{key}-{s}.bin.tmp{os.getpid()}" for s in ("train", "val")}
    n = {"train": 0, "val": 0}
    n_docs, n_bytes = 0, 0
    try:  # a bad record (one line naming it) or any failure leaves no temporary file behind
        with open(tmp["train"], "wb") as ft, open(tmp["val"], "wb") as fv:
            out = {"train": ft, "val": fv}
            batch: dict[str, list[str]] = {"train": [], "val": []}

            def flush(split: str) -> None:
                docs = batch[split]
                if not docs:
                    return
                if tok is not None:
                    ids = bpe.encode(tok, docs, eot=True)
                else:
                    ids = np.frombuffer("".join(d + "\n\n" for d in docs).encode("utf-8", errors="replace"),
                                        dtype=np.uint8)
                ids.astype(dtype, copy=False).tofile(out[split])
                n[split] += len(ids)
                batch[split] = []

            for doc, held in owt_split(files, max_bytes):
                split = "val" if held else "train"
                batch[split].append(doc)
                n_docs += 1
                n_bytes += len(doc.encode("utf-8", errors="replace"))
                if len(batch[split]) >= batch_docs:
                    flush(split)
            flush("train")
            flush("val")
        if n["train"] == 0 or n["val"] == 0:
            raise InvalidInput(f"--data: owt: {str(root)!r} gave {n_docs} document(s); need at least 2 "
                               "(one trained on, one held out)")
        for s in ("train", "val"):
            os.replace(tmp[s], cache / f"owt-{key}-{s}.bin")
    finally:
        for t in tmp.values():
            if t.exists():
                t.unlink()
    kind = f"byte-level BPE vocab {v}" if tok is not None else "byte-level vocab 256"
    meta = {
        "train": {"file": f"owt-{key}-train.bin", "n": n["train"]},
        "val": {"file": f"owt-{key}-val.bin", "n": n["val"]},
        "dtype": dtype.name, "vocab": v, "tokenizer_file": str(tok_path) if tok_path else None,
        "description": (f"openwebtext (local {root}): {len(files)} files, {n_docs} docs, {n_bytes} bytes "
                        f"(train {n['train']}, val {n['val']} tokens), {kind}"),
    }
    mp = cache / f"owt-{key}.json"
    tmpm = mp.with_suffix(f".json.tmp{os.getpid()}")
    tmpm.write_text(json.dumps(meta, indent=1))
    os.replace(tmpm, mp)


def load_corpus(data: str | None = None, max_bytes: int | None = DEFAULT_MAX_BYTES, tokenizer: str = "bytes",
                vocab: int | None = None, cache_dir: str | os.PathLike | None = None) -> Corpus:
    """Dispatch on ``--data``: ``None``/``"builtin"``, ``"owt"`` / ``"owt:FOLDER"``, or a path.

    ``tokenizer``: ``"bytes"`` (vocab 256) or ``"bpe"`` (``vocab`` tokens, default 4,096).
    """
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer={tokenizer!r} is not one of: {', '.join(TOKENIZERS)}")
    if data in (None, "", "builtin"):
        return load_builtin(max_bytes or DEFAULT_MAX_BYTES, tokenizer=tokenizer, vocab=vocab, cache_dir=cache_dir)
    if data == "owt" or str(data).startswith("owt:"):
        folder = str(data)[4:] or None
        return load_owt(folder, max_bytes, tokenizer, vocab, cache_dir)
    return load_path(data, tokenizer=tokenizer, vocab=vocab, cache_dir=cache_dir)


def corpus_for(train_config: dict) -> Corpus:
    """The corpus a checkpoint was trained on, from its saved ``train_config``."""
    return load_corpus(train_config.get("data"), train_config.get("max_bytes", DEFAULT_MAX_BYTES),
                       train_config.get("tokenizer", "bytes"), train_config.get("bpe_vocab"))


def main(argv: list[str] | None = None) -> int:
    """Build the corpus / tokenizer cache ahead of a (multi-GPU) run and print its description."""
    import sys

    from stylized.core.options import (
        Choice,
        Int,
        OptionParser,  # one-line usage errors (exit 2)
        arg_type,
    )

    ap = OptionParser(prog="python -m simulations.transformer.data.corpus")
    ap.add_argument("--data", default=None, help="builtin (default), owt[:FOLDER], or a text file/folder")
    ap.add_argument("--tokenizer", default="bytes", type=arg_type(Choice(*TOKENIZERS)))
    ap.add_argument("--vocab", type=arg_type(Int(257, 10**6)), default=None,
                    help=f"BPE vocabulary (default {DEFAULT_BPE_VOCAB})")
    ap.add_argument("--max-bytes", type=arg_type(Int(1, 10**15)), default=None, help="cap on text read (owt default: all)")
    args = ap.parse_args(argv)
    max_bytes = args.max_bytes if args.max_bytes is not None else (
        None if str(args.data).startswith("owt") else DEFAULT_MAX_BYTES)
    try:
        c = load_corpus(args.data, max_bytes, args.tokenizer, args.vocab)
    except ValueError as e:  # InvalidInput (a bad record, a missing extra) and the --data checks
        print(f"error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    print(c.description)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
