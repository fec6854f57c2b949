"""The files and documents a corpus is made of, read and checked (no tokenising, no caching).

``builtin``: the standard library's ``*.py`` files (:func:`stdlib_files`); ``PATH``: a text file or the
``*.txt/*.py/*.md`` files under a folder (:func:`text_files`), split by file (:func:`read_split`);
``owt``: a local OpenWebText folder (:func:`owt_dir`, :func:`owt_files`) streamed document by document
(:func:`iter_owt_docs`), every record checked (a bad one is one :class:`~stylized.core.errors.InvalidInput`
line naming the file and line), split every ``OWT_VAL_EVERY``-th document (:func:`owt_split`).
:mod:`.corpus` turns these into token arrays.
"""

from __future__ import annotations

import json
import os
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from stylized.core.errors import InvalidInput

HELDOUT_FRACTION = 0.05
TEXT_SUFFIXES = (".txt", ".py", ".md")
_EXCLUDE_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}
#: environment variable naming the local OpenWebText folder
OWT_ENV = "STYLIZED_OWT_DIR"
OWT_SUFFIXES = (".parquet", ".arrow", ".jsonl", ".txt")
#: every OWT_VAL_EVERY-th OpenWebText document is held out
OWT_VAL_EVERY = 200


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
        raise InvalidInput(f"--data: {str(path)!r} is not one of: builtin, owt, an existing file/folder")
    files = sorted(
        (f for f in p.rglob("*") if f.is_file() and f.suffix in TEXT_SUFFIXES),
        key=lambda f: f.relative_to(p).as_posix(),
    )
    if not files:
        raise InvalidInput(f"--data: {str(path)!r}: no *.txt/*.py/*.md files found")
    return files


def read_split(files: list[Path], max_bytes: int) -> tuple[list[bytes], list[bytes], int, int]:
    """Files (each + ``\n\n``, capped at ``max_bytes`` in all) as (train, held-out, bytes, files).

    The last 5% of the files are held out (at least one when there are several); a single
    file is cut at 95% of its bytes.
    """
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
        return chunks[:-n_val], chunks[-n_val:], total, len(chunks)
    data = chunks[0]
    cut = int(len(data) * (1 - HELDOUT_FRACTION))
    return [data[:cut]], [data[cut:]], total, 1

# ---------------------------------------------------------------------------
# OpenWebText, local files only
# ---------------------------------------------------------------------------


def owt_dir(spec: str | os.PathLike | None = None) -> Path:
    """The local OpenWebText folder: ``spec``, else ``$STYLIZED_OWT_DIR``; a clear error otherwise."""
    spec = spec or os.environ.get(OWT_ENV)
    hint = (f"data='owt' reads a local OpenWebText copy (no download): pass --data owt:/path/to/folder "
            f"or set {OWT_ENV}; the folder holds {'/'.join('*' + x for x in OWT_SUFFIXES)} files "
            "with a 'text' column/field")
    if not spec:
        raise InvalidInput("--data: " + hint)
    p = Path(spec).expanduser()
    if not p.is_dir():
        raise InvalidInput(f"--data: {str(p)!r} is not a folder. {hint}")
    return p


def owt_files(root: str | os.PathLike) -> list[Path]:
    """The OpenWebText files under ``root``, sorted by relative path."""
    root = Path(root)
    files = sorted((f for f in root.rglob("*") if f.is_file() and f.suffix in OWT_SUFFIXES),
                   key=lambda f: f.relative_to(root).as_posix())
    if not files:
        raise InvalidInput(f"--data: owt: no {'/'.join('*' + x for x in OWT_SUFFIXES)} files under {str(root)!r}")
    return files


def _arrow_tables(f: Path):
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InvalidInput(f"--data: reading {f} needs pyarrow: install the \"owt\" extra "
                           "(pip install stylized[owt])") from None
    if f.suffix == ".parquet":
        pf = pq.ParquetFile(f)
        for i in range(pf.num_row_groups):
            yield pf.read_row_group(i, columns=["text"])
        return
    with pa.memory_map(str(f)) as src:
        try:
            reader = pa.ipc.open_stream(src)  # HuggingFace datasets cache files
        except pa.ArrowInvalid:
            reader = pa.ipc.open_file(src)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)
            return
        yield from reader


def _json_type(x) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(x), "number")


def _jsonl_docs(f: Path) -> Iterator[str]:
    """The ``text`` of every record of a jsonl file; a record that is not ``{"text": "…", …}`` is one line
    naming the file and the line number."""
    n = 0
    try:
        with open(f, "rb") as fh:  # bytes, decoded line by line: a decoding error names its line
            for n, raw in enumerate(fh, 1):  # noqa: B007 (n names the line a decoding error is in)
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    raise InvalidInput(f"--data: {f} line {n} is not JSON ({str(e).splitlines()[0][:80]})") from None
                if not isinstance(rec, dict):
                    raise InvalidInput(f"--data: {f} line {n} is a JSON {_json_type(rec)}, not an object with a "
                                       "'text' field")
                text = rec.get("text")
                if not isinstance(text, str):
                    why = "no 'text' field" if "text" not in rec else f"a 'text' that is a JSON {_json_type(text)}"
                    raise InvalidInput(f"--data: {f} line {n} has {why}; every record needs a 'text' string")
                yield text
    except UnicodeDecodeError as e:
        raise InvalidInput(f"--data: {f} line {n} is not UTF-8 ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise InvalidInput(f"--data: {f} cannot be read ({e.strerror or type(e).__name__})") from None


def _arrow_docs(f: Path) -> Iterator[str]:
    """The ``text`` column of a parquet / arrow file; an unreadable file or column is one line naming it."""
    tables = _arrow_tables(f)
    while True:
        try:
            table = next(tables, None)
            if table is None:
                return
            col = table.column("text").to_pylist()
        except InvalidInput:
            raise
        except Exception as e:  # pyarrow: ArrowInvalid, KeyError (no column), OSError…
            raise InvalidInput(f"--data: {f} is not a readable table with a 'text' column "
                               f"({type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''})") from None
        for t in col:
            if t is None:
                continue
            if not isinstance(t, str):
                raise InvalidInput(f"--data: {f}: its 'text' column holds {type(t).__name__} values, not strings")
            yield t


def iter_owt_docs(files: list[Path]) -> Iterator[str]:
    """Documents in file order: parquet/arrow ``text`` column, jsonl ``text`` field, one per txt file."""
    for f in files:
        if f.suffix == ".txt":
            yield f.read_text(encoding="utf-8", errors="replace")
        elif f.suffix == ".jsonl":
            yield from _jsonl_docs(f)
        else:
            yield from _arrow_docs(f)


def owt_split(files: list[Path], max_bytes: int | None) -> Iterator[tuple[str, bool]]:
    """(document, held out?) pairs: every ``OWT_VAL_EVERY``-th held out (short streams: the last 5%)."""
    cap = max_bytes if max_bytes and max_bytes > 0 else None
    head: list[str] = []
    total = 0
    for i, doc in enumerate(iter_owt_docs(files)):
        if cap is not None and total >= cap:
            break
        total += len(doc.encode("utf-8", errors="replace"))
        if i < OWT_VAL_EVERY:
            head.append(doc)
            if i == OWT_VAL_EVERY - 1:
                yield from ((d, j == OWT_VAL_EVERY - 1) for j, d in enumerate(head))
                head = []
            continue
        yield doc, i % OWT_VAL_EVERY == OWT_VAL_EVERY - 1
    if head:  # fewer than OWT_VAL_EVERY documents in all
        n_val = max(1, int(round(len(head) * HELDOUT_FRACTION))) if len(head) > 1 else 0
        yield from ((d, j >= len(head) - n_val) for j, d in enumerate(head))
