"""The transformer commands' files: the one checkpoint loader, atomic checkpoint writes, destination probes.

* :func:`read_checkpoint` is the only place a checkpoint is read (``torch.load(..., weights_only=True)``, so
  a crafted file runs no code).  It refuses, as :class:`~stylized.InvalidInput` (one line naming the option
  and the file, exit 2 on the command line), a file that is missing, empty, truncated or damaged (the zip
  archive's CRC-32s are checked, so a flipped bit in the weights is found too), not a torch file (text,
  random bytes), a torch file that is not ours (``{"a": 1}``, a bare tensor) or one whose entries have the
  wrong types, or one whose ``model_config`` is over the bounds of :mod:`~simulations.transformer.model.limits` (checked before any
  tensor of the model is built); :func:`load_weights` then checks every tensor's name and shape against the model its
  ``model_config`` builds.  :func:`load_training_state` (resuming) also checks the optimizer and RNG states.
* :func:`save_checkpoint`: atomic; a failed write (a full disk) leaves neither a partial file nor a
  temporary one, and the previous checkpoint as it was.
* :func:`check_dir` / :func:`check_figure`: prove before any work that a ``--results-dir`` / ``--figure``
  can be written (create and remove a probe file there; folders it had to make are removed again).
"""

from __future__ import annotations

import errno
import numbers
import os
import pickle
import random
import re
import shutil
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
import torch

from stylized.core.errors import InvalidInput
from stylized.harness.results import probe_writable

__all__ = ["read_checkpoint", "load_weights", "load_training_state", "save_checkpoint", "check_dir",
           "check_figure", "numpy_state_to_safe", "numpy_state_from_safe", "REQUIRED_KEYS", "RESUME_KEYS"]

#: entries every stylized checkpoint has (``train.train`` writes them all)
REQUIRED_KEYS = ("model", "model_config", "step", "variant")
#: entries a checkpoint needs to be resumed
RESUME_KEYS = ("optimizer", "rng")
_ZIP_MAGIC = b"PK\x03\x04"
_PICKLE_MAGIC = b"\x80"  # the legacy (pre-zip) torch format is a pickle stream


def _shown(path: str | os.PathLike) -> str:
    s = str(path)
    s = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)
    return s if len(s) <= 160 else s[:80] + "…" + s[-79:]


def _why(e: BaseException, limit: int = 120) -> str:
    """One line about ``e``: its first line (torch's long messages cut), at most ``limit`` characters."""
    text = str(e).strip()
    m = re.search(r"Unsupported global: GLOBAL (\S+)", text)
    if m:
        return f"it holds a {m.group(1).rstrip('.')} object; a checkpoint holds only tensors and plain data"
    m = re.search(r"WeightsUnpickler error:\s*(.+?)(?:\n\n|$)", text, re.S)
    if m:  # torch's weights-only unpickler refused an instruction or a type
        text = "the weights-only loader refuses it: " + " ".join(m.group(1).split())
        return text if len(text) <= limit else text[: limit - 1] + "…"
    first = text.split("\n")[0].strip() if text else ""
    first = re.sub(r"\x1b\[[0-9;]*m", "", first)
    first = first.split(". This is an internal miniz error")[0]
    first = "".join(c if c.isprintable() else " " for c in first)
    name = type(e).__name__
    out = f"{name}: {first}" if first else name
    return out if len(out) <= limit else out[: limit - 1] + "…"


class _Refuse:
    """The two refusals of one file, worded the same everywhere."""

    def __init__(self, label: str, path: str | os.PathLike) -> None:
        self.label, self.shown = label, _shown(path)

    def corrupt(self, why: str) -> InvalidInput:
        return InvalidInput(f"{self.label}: {self.shown} is corrupt ({why})")

    def foreign(self, why: str) -> InvalidInput:
        return InvalidInput(f"{self.label}: {self.shown} is not a stylized checkpoint ({why})")


def _check_zip(p: Path, refuse: _Refuse) -> None:
    """A torch zip archive, complete, every member's CRC-32 right."""
    try:
        with zipfile.ZipFile(p) as z:
            names = z.namelist()
            if not any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
                raise refuse.foreign("a zip archive, but not a torch file: no data.pkl in it")
            bad = z.testzip()
    except InvalidInput:
        raise
    except zipfile.BadZipFile as e:
        raise refuse.corrupt(f"truncated or damaged zip archive: {str(e).splitlines()[0][:100] if str(e) else ''}"
                             .rstrip(": ")) from None
    except Exception as e:  # zipfile raises several types on a damaged archive (EOFError, ValueError, zlib.error…)
        raise refuse.corrupt(f"damaged zip archive: {_why(e)}") from None
    if bad is not None:
        raise refuse.corrupt(f"CRC-32 mismatch in {bad}: the file was damaged after it was written")


def _is_tensor_dict(d) -> bool:
    return isinstance(d, dict) and all(isinstance(k, str) and torch.is_tensor(v) for k, v in d.items())


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _check_entries(ck, refuse: _Refuse, resume: bool) -> None:
    """The checkpoint's entries and their types (shapes are :func:`load_weights`'s)."""
    from ..model.config import VARIANTS, GPTConfig

    if not isinstance(ck, dict):
        what = f"a tensor of shape {list(ck.shape)}" if torch.is_tensor(ck) else f"a {type(ck).__name__}"
        raise refuse.foreign(f"it holds {what}, not a dict of the entries {', '.join(REQUIRED_KEYS)}")
    need = REQUIRED_KEYS + (RESUME_KEYS if resume else ())
    missing = [k for k in need if k not in ck]
    if missing:
        have = ", ".join(sorted(map(str, ck))[:5]) or "nothing"
        raise refuse.foreign(f"no {', '.join(missing)} entr{'y' if len(missing) == 1 else 'ies'}; it holds {have}")
    if not _is_tensor_dict(ck["model"]) or not ck["model"]:
        raise refuse.foreign("'model' is not a dict of named tensors")
    if not isinstance(ck["model_config"], dict):
        raise refuse.foreign(f"'model_config' is a {type(ck['model_config']).__name__}, not a dict")
    if not _is_int(ck["step"]) or ck["step"] < 0:
        raise refuse.foreign(f"'step' is {ck['step']!r}, not an integer ≥ 0")
    if ck["variant"] not in VARIANTS:
        raise refuse.foreign(f"'variant' is {ck['variant']!r}, not one of the variants")
    for k in ("train_config",):
        if k in ck and not isinstance(ck[k], dict):
            raise refuse.foreign(f"'{k}' is a {type(ck[k]).__name__}, not a dict")
    if "history" in ck and not isinstance(ck["history"], (list, tuple)):
        raise refuse.foreign(f"'history' is a {type(ck['history']).__name__}, not a list")
    try:
        cfg = GPTConfig(**ck["model_config"])
    except (TypeError, ValueError) as e:
        raise refuse.foreign(f"its model_config is not a model configuration: {_why(e, 100)}") from None
    if cfg.variant != ck["variant"]:
        raise refuse.foreign(f"'variant' {ck['variant']!r} differs from its model_config's {cfg.variant!r}")
    from ..model.limits import check_config_limits

    too_big = check_config_limits(cfg, ck["model"])  # before any tensor of the model is built
    if too_big:
        raise refuse.foreign(too_big)
    if resume:
        opt, rng = ck["optimizer"], ck["rng"]
        if not (isinstance(opt, dict) and isinstance(opt.get("state"), dict)
                and isinstance(opt.get("param_groups"), list)):
            raise refuse.foreign("'optimizer' is not an optimizer state (a dict with 'state' and 'param_groups')")
        if not (isinstance(rng, dict) and all(k in rng for k in ("torch", "numpy", "python"))):
            raise refuse.foreign("'rng' is not the RNG states (a dict with 'torch', 'numpy' and 'python')")


def read_checkpoint(path: str | os.PathLike, device: str | torch.device = "cpu", *, label: str = "checkpoint",
                    resume: bool = False) -> dict:
    """The checkpoint at ``path`` as a dict, its entries checked (``resume``: also the optimizer and RNG states).

    Raises :class:`~stylized.InvalidInput` ``"<label>: <path> is corrupt (…)"`` or ``"… is not a stylized
    checkpoint (…)"``; never anything else for a bad file.
    """
    p = Path(path)
    refuse = _Refuse(label, p)
    if not p.exists():
        raise InvalidInput(f"{label}: {refuse.shown} does not exist")
    if not p.is_file():
        raise InvalidInput(f"{label}: {refuse.shown} is not a file")
    try:
        with open(p, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise InvalidInput(f"{label}: {refuse.shown} cannot be read ({e.strerror or type(e).__name__})") from None
    if not head:
        raise refuse.corrupt("an empty file")
    if head == _ZIP_MAGIC:
        _check_zip(p, refuse)
    elif not head.startswith(_PICKLE_MAGIC):
        raise refuse.foreign("not a torch file")
    try:
        with warnings.catch_warnings():  # torch warns (e.g. about the pickle protocol): one line on stderr, ours
            warnings.simplefilter("ignore")
            ck = torch.load(p, map_location=device, weights_only=True)
    except pickle.UnpicklingError as e:  # an intact archive (CRC-32s checked) whose content is not ours
        raise refuse.foreign(_why(e)) from None
    except Exception as e:  # torch.load has no single error type for a damaged file (RuntimeError, OSError, …)
        if head == _ZIP_MAGIC:
            raise refuse.corrupt(_why(e)) from None
        raise refuse.foreign(f"not a torch file: {_why(e)}") from None
    _check_entries(ck, refuse, resume)
    return ck


def load_weights(model: torch.nn.Module, ck: dict, path: str | os.PathLike, *, label: str = "checkpoint") -> None:
    """Load ``ck["model"]`` into ``model`` after checking every tensor's name, shape and finiteness."""
    refuse = _Refuse(label, path)
    want = model.state_dict()
    got = ck["model"]
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    if missing or extra:
        parts = ([f"no {missing[0]}" + (f" (+{len(missing) - 1} more)" if len(missing) > 1 else "")] if missing else []) \
            + ([f"an unknown {extra[0]}" + (f" (+{len(extra) - 1} more)" if len(extra) > 1 else "")] if extra else [])
        raise refuse.foreign(f"its weights do not fit its model_config: {'; '.join(parts)}")
    for k, t in want.items():
        if tuple(got[k].shape) != tuple(t.shape):
            raise refuse.foreign(f"its weights do not fit its model_config: {k} has shape {list(got[k].shape)}, "
                                 f"expected {list(t.shape)}")
        if got[k].dtype.is_complex or (t.dtype.is_floating_point and not got[k].dtype.is_floating_point):
            raise refuse.foreign(f"{k} is {got[k].dtype}, expected {t.dtype}")
    params = {n for n, _ in model.named_parameters()}
    for k in params:
        if not bool(torch.isfinite(got[k]).all()):
            raise refuse.corrupt(f"{k} holds NaN or infinite weights")
    try:
        model.load_state_dict(got)
    except (RuntimeError, ValueError, TypeError) as e:
        raise refuse.foreign(f"its weights do not load: {_why(e)}") from None


def load_training_state(ck: dict, model: torch.nn.Module, opt: torch.optim.Optimizer, path: str | os.PathLike,
                        *, label: str = "--resume") -> None:
    """Load a checkpoint read with ``resume=True`` into ``model`` and ``opt`` after checking that it is this
    run's (the same model configuration) and that its weights, optimizer and RNG states fit, so that the
    first training step cannot fail on them (the RNG states are the caller's to restore)."""
    refuse = _Refuse(label, path)
    mine = model.config.to_dict()
    diff = [k for k in mine if k in ck["model_config"] and ck["model_config"][k] != mine[k]]
    if diff:
        k = diff[0]
        raise InvalidInput(f"{label}: {refuse.shown} was trained with {k}={ck['model_config'][k]!r}, this run has "
                           f"{k}={mine[k]!r}: not this run's checkpoint (pass --force to retrain over it)")
    load_weights(model, ck, path, label=label)
    try:
        opt.load_state_dict(ck["optimizer"])
    except (ValueError, KeyError, TypeError, RuntimeError, IndexError, AttributeError) as e:
        raise refuse.foreign(f"its optimizer state does not fit the model: {_why(e)}") from None
    for p, st in opt.state.items():
        for k, v in st.items():
            if torch.is_tensor(v) and k != "step" and tuple(v.shape) != tuple(p.shape):
                raise refuse.foreign(f"its optimizer state {k} has shape {list(v.shape)}, the parameter "
                                     f"{list(p.shape)}")
    rng = ck["rng"]
    try:
        t = rng["torch"]
        if not (torch.is_tensor(t) and t.dtype == torch.uint8 and t.numel() == torch.get_rng_state().numel()):
            raise ValueError("the torch RNG state is not a byte tensor of the right size")
        np.random.RandomState().set_state(numpy_state_from_safe(rng["numpy"]))
        random.Random().setstate(rng["python"])
    except Exception as e:  # numpy / random raise TypeError, ValueError, IndexError… on a malformed state
        raise refuse.foreign(f"its RNG state is malformed: {_why(e)}") from None
    for h in ck.get("history", []):
        if not (isinstance(h, (list, tuple)) and len(h) == 2 and _is_int(h[0]) and isinstance(h[1], numbers.Real)
                and not isinstance(h[1], bool)):
            raise refuse.foreign("its loss history is not a list of (step, loss) pairs")


def numpy_state_to_safe(st: tuple) -> tuple:
    """NumPy's legacy RNG state with its key array as a tensor (loadable with ``weights_only=True``)."""
    return (st[0], torch.from_numpy(np.asarray(st[1], dtype=np.int64)), int(st[2]), int(st[3]), float(st[4]))


def numpy_state_from_safe(st: tuple) -> tuple:
    """NumPy's legacy RNG state back from :func:`numpy_state_to_safe` (the key array as ``uint32`` again)."""
    return (st[0], np.asarray(st[1].numpy() if torch.is_tensor(st[1]) else st[1], dtype=np.uint32),
            int(st[2]), int(st[3]), float(st[4]))


def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    """Write ``state`` to ``path`` atomically: a same-folder temporary file, then ``os.replace``.  On any
    failure (a full disk, an interrupt) the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        try:
            torch.save(state, tmp)
        except RuntimeError as e:  # torch's writer reports a full disk as "[enforce fail …] unexpected pos"
            why = errno.ENOSPC if _free_bytes(path.parent) < (1 << 20) else errno.EIO
            raise OSError(why, f"{os.strerror(why)}: writing {path} failed ({str(e).splitlines()[0][:120]})") from None
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _free_bytes(directory: str | os.PathLike) -> int:
    """Free bytes on the file system of ``directory`` (its nearest existing folder); a huge number if unknown."""
    p = Path(directory).absolute()
    while not p.exists() and p.parent != p:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return 1 << 62


def check_space(directory: str | os.PathLike, need: int, option: str, what: str = "the checkpoint") -> None:
    """Refuse (:class:`~stylized.InvalidInput` naming ``option``) before any work when the file system of
    ``directory`` has less than ``need`` bytes free."""
    free = _free_bytes(directory)
    if free < need:
        raise InvalidInput(f"{option}: {_shown(directory)} has {free:,} bytes free; {what} needs about {need:,} "
                           "(free some space or pass another folder)")


def check_dir(directory: str | os.PathLike, option: str, what: str | os.PathLike | None = None) -> None:
    """Prove that files can be made in ``directory`` (:func:`stylized.harness.results.probe_writable`: folders it lacks are
    created for the probe, then removed): :class:`~stylized.InvalidInput` naming ``option`` (and ``what`` is
    written there) otherwise."""
    d = Path(directory)
    try:
        probe_writable(d)
    except OSError as e:
        why = e.strerror or type(e).__name__
        if what is not None:
            raise InvalidInput(f"{option}: {_shown(what)} cannot be written ({why})") from None
        raise InvalidInput(f"{option}: {_shown(d)} is not writable ({why})") from None


def check_figure(path: str | os.PathLike, option: str = "--figure") -> None:
    """Prove that the figure ``path`` (and the PDF written beside it) can be written."""
    p = Path(path)
    try:
        folder = p.is_dir()
    except OSError as e:  # a name too long, a loop of links: not writable either
        raise InvalidInput(f"{option}: {_shown(p)} cannot be written ({e.strerror or type(e).__name__})") from None
    if folder:
        raise InvalidInput(f"{option}: {_shown(p)} is a folder; give a file name such as {_shown(p / 'figure.png')}")
    if not p.name or p.name in (".", ".."):
        raise InvalidInput(f"{option}: {_shown(p)} is not a file name")
    check_dir(p.parent, option, p)
