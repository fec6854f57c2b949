"""Byte-level BPE trained locally with HuggingFace ``tokenizers``, cached on disk.

The author's runs use a byte-level BPE with a 32K vocabulary; this module trains one on the
*training split* of whichever corpus is in use (never the held-out text), so nothing is
downloaded.  Byte-level means lossless: ``decode(encode(text)) == text`` for any text.

Cache: ``<cache>/bpe-<key>.json`` where ``key`` hashes the corpus description (its
provenance and size), a content fingerprint and the vocabulary size; the cache folder is
``$STYLIZED_DATA_CACHE`` or ``~/.cache/stylized/transformer`` (the same folder holds the
token arrays of :mod:`simulations.transformer.data.corpus`).  Presets: 4,096 tokens for ``cpu``,
32,768 for ``paper``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

#: bump when the training recipe changes (invalidates cached tokenizers)
BPE_VERSION = 1
EOT = "<|endoftext|>"
#: encode in pieces of about this many characters (``encode_batch`` parallelises over pieces)
PIECE_CHARS = 1 << 16


def cache_dir(root: str | os.PathLike | None = None) -> Path:
    """The corpus / tokenizer cache folder (created)."""
    if root is None:
        root = os.environ.get("STYLIZED_DATA_CACHE") or Path.home() / ".cache" / "stylized" / "transformer"
    p = Path(root)
    p.mkdir(parents=True, exist_ok=True)
    return p


def cache_key(*parts: object) -> str:
    """Short stable hash of the parts (corpus description, fingerprint, vocab, version)."""
    h = hashlib.sha256()
    for part in (*parts, f"bpe-v{BPE_VERSION}"):
        h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def token_dtype(vocab: int) -> np.dtype:
    """Smallest unsigned dtype holding ids < ``vocab``."""
    if vocab <= 256:
        return np.dtype(np.uint8)
    return np.dtype(np.uint16) if vocab <= 65536 else np.dtype(np.int32)


def _require():
    try:
        import tokenizers
    except ImportError as e:
        raise ImportError(
            "tokenizer='bpe' needs HuggingFace tokenizers: pip install tokenizers "
            "(or the transformer extra: pip install -e '.[transformer]')"
        ) from e
    return tokenizers


def train_bpe(texts: Iterable[str], vocab: int, path: str | os.PathLike):
    """Train a byte-level BPE of ``vocab`` tokens (``<|endoftext|>`` included) and save it atomically."""
    tk = _require()
    if vocab < 258:
        raise ValueError(f"bpe_vocab={vocab!r} must be at least 258 (256 bytes + <|endoftext|> + 1 merge)")
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=[EOT], show_progress=False,
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer=trainer)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    tok.save(str(tmp))
    os.replace(tmp, path)
    return tok


def load_bpe(path: str | os.PathLike):
    """A saved tokenizer."""
    return _require().Tokenizer.from_file(str(path))


#: a text the cached tokenizer must give back unchanged (byte-level BPE is lossless)
_ROUND_TRIP = "def f(x):\n\treturn 'é' + x  # ∑ 1e-3\n"


def bpe_problem(path: str | os.PathLike, vocab: int):
    """(the tokenizer saved at ``path``, ``None``) or (``None``, why it is not a byte-level BPE of at most
    ``vocab`` tokens with ``<|endoftext|>`` that gives a text back unchanged)."""
    _require()
    try:
        tok = load_bpe(path)
        n = tok.get_vocab_size()
        if not 257 <= n <= vocab:
            return None, f"its vocabulary has {n} tokens, not 257 to {vocab}"
        if tok.token_to_id(EOT) is None:
            return None, f"it has no {EOT} token"
        if tok.decode(tok.encode(_ROUND_TRIP).ids) != _ROUND_TRIP:
            return None, "decoding an encoded text does not give it back (not a byte-level BPE)"
    except Exception as e:  # tokenizers raises a bare Exception on a damaged file
        first = str(e).splitlines()[0][:100] if str(e) else type(e).__name__
        return None, f"not a tokenizer file: {''.join(c if c.isprintable() else ' ' for c in first)}"
    return tok, None


def get_bpe(texts: Iterable[str] | None, vocab: int, key: str, root: str | os.PathLike | None = None):
    """The cached BPE ``bpe-<key>.json``, trained from ``texts`` on a miss; returns (tokenizer, path, hit).

    The cached file is checked (:func:`bpe_problem`); an unusable one is named in one line and retrained
    (refused, :class:`~stylized.InvalidInput`, when there is no ``texts`` to retrain it from)."""
    import sys

    from stylized.core.errors import InvalidInput

    path = cache_dir(root) / f"bpe-{key}.json"
    if path.exists():
        tok, why = bpe_problem(path, vocab)
        if tok is not None:
            return tok, path, True
        if texts is None:
            raise InvalidInput(f"tokenizer: {path} is unusable ({why}); delete it to retrain it")
        print(f"[data] {path}: unusable tokenizer ({why}); retraining it", file=sys.stderr, flush=True)
    if texts is None:
        raise FileNotFoundError(f"no cached tokenizer {path}")
    return train_bpe(texts, vocab, path), path, False


def _pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """Split at newlines into pieces of about ``size`` characters (concatenation = ``text``)."""
    out, start, n = [], 0, len(text)
    while start < n:
        end = min(n, start + size)
        if end < n:
            nl = text.rfind("\n", start + 1, end)
            end = nl + 1 if nl > start else end
        out.append(text[start:end])
        start = end
    return out


def encode(tok, texts: Sequence[str], eot: bool = False) -> np.ndarray:
    """Token ids of the concatenated ``texts`` (with ``<|endoftext|>`` after each when ``eot``).

    Each text is cut at newlines into pieces of about :data:`PIECE_CHARS` characters, and all
    pieces go through one ``encode_batch`` (parallel in Rust).  Byte-level BPE is lossless, so
    decoding the result gives the concatenation back.
    """
    pieces: list[str] = []
    counts: list[int] = []
    for t in texts:
        ps = _pieces(t)
        pieces.extend(ps)
        counts.append(len(ps))
    enc = iter(tok.encode_batch(pieces)) if pieces else iter(())
    eot_id = np.asarray([tok.token_to_id(EOT)], dtype=np.int64)
    chunks: list[np.ndarray] = []
    for n in counts:
        chunks.extend(np.asarray(next(enc).ids, dtype=np.int64) for _ in range(n))
        if eot:
            chunks.append(eot_id)
    arr = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
    return arr.astype(token_dtype(tok.get_vocab_size()))


def decode(tok, ids: np.ndarray | Sequence[int]) -> str:
    """Text of token ids (special tokens kept)."""
    return tok.decode([int(i) for i in np.asarray(ids).ravel()], skip_special_tokens=False)
