"""A user's step law, never trusted: its module, factory and draws contained and validated before any check uses them.

:func:`contained` turns anything a user's code raises (``SystemExit`` and ``KeyboardInterrupt`` included) into one
:class:`~stylized.core.errors.InvalidLaw` line; :func:`validate_law` probes a few draws through the ``sample`` /
``dense`` / ``apply`` path the checks use and refuses, naming the property, a law whose draws are not finite, not
real, wrongly shaped or of another ``d``, not orthogonal to rounding (unless it declares a contraction) or expanding;
:func:`guarded` keeps validating every later draw (finite, real, shaped, norm-preserving on a probe vector) while a
check runs; :func:`user_code` contains a run whose traceback passes through a user's module.

>>> from stylized.laws.registry import make_family
>>> validate_law(make_family("householder", 6), 6) is None
True
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Iterator

import numpy as np

from ..core.errors import InvalidInput, InvalidLaw
from .base import StepLaw
from .family_args import MAX_DIM

__all__ = ["contained", "exception_line", "guarded", "trusted", "validate_law", "draw_defects", "user_code", "user_files", "ORTHO_TOL"]

ORTHO_TOL = 1e-8
"""``max |MᵀM − I|`` (and ``||M||_op − 1`` for a declared contraction) allowed for rounding."""

_PROBE_SHAPE = (2, 3)  # six draws, in two axes: a law that handles only one axis of draws is caught
_EXACT_BELOW = 513  # MᵀM in full up to this d; above, ||Mx|| on random vectors (O(d²) per draw)


def exception_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text[:200]}" if text else type(e).__name__


@contextlib.contextmanager
def contained(what: str) -> Iterator[None]:
    """Run a user's code (``what`` names it: ``"family 'mod:F': sample"``); anything it raises, ``SystemExit``,
    ``KeyboardInterrupt`` and ``MemoryError`` included, becomes :class:`InvalidLaw` ``"<what> raised <Type>: …"``.
    A refusal of ours (:class:`InvalidInput`) passes unchanged."""
    try:
        yield
    except InvalidInput:
        raise
    except BaseException as e:  # noqa: BLE001  (a user's code may raise anything: GeneratorExit, its own classes)
        raise InvalidLaw(f"{what} raised {exception_line(e)}") from None


def _declarations(law: StepLaw, label: str) -> None:
    for cap in ("orthogonal", "isotropic", "planes", "pathwise", "iid"):
        if not isinstance(getattr(law, cap, False), (bool, np.bool_)):
            raise InvalidLaw(f"{label}: declares {cap} = {getattr(law, cap)!r}; a declaration is True or False")
    if getattr(law, "step_ndim", None) not in (0, 1, 2) or isinstance(law.step_ndim, bool):
        raise InvalidLaw(f"{label}: declares step_ndim = {getattr(law, 'step_ndim', None)!r}; must be 0, 1 or 2")


def _real(x, what: str, label: str, array: bool = True) -> np.ndarray:
    """``x`` as an array of real numbers, or :class:`InvalidLaw`; ``array``: ``x`` must already be a NumPy array (the
    checks index draws as arrays: a list or a scalar is refused)."""
    if array and not isinstance(x, np.ndarray):
        raise InvalidLaw(f"{label}: {what} are a {type(x).__name__}, not a NumPy array (sample(xrng, shape, np) "
                         "returns shape + (d, d) floats)")
    with contained(f"{label}: converting {what} to an array"):
        arr = np.asarray(x)
    if np.iscomplexobj(arr):
        raise InvalidLaw(f"{label}: {what} are complex ({arr.dtype}); a step law's draws are real")
    if arr.dtype.kind not in "biuf":
        raise InvalidLaw(f"{label}: {what} have dtype {arr.dtype}; a step law's draws are real numbers")
    return arr


def _op_norms(m: np.ndarray, rng) -> np.ndarray:
    """``||M||_op`` per draw: exact (SVD) up to :data:`_EXACT_BELOW`, else a lower bound by 30 power iterations."""
    d = m.shape[-1]
    if d < _EXACT_BELOW:
        return np.linalg.norm(m, ord=2, axis=(-2, -1))
    x = rng.standard_normal(m.shape[:-1])
    for _ in range(30):
        x = np.einsum("...ji,...j->...i", m, np.einsum("...ij,...j->...i", m, x))
        x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return np.linalg.norm(np.einsum("...ij,...j->...i", m, x), axis=-1)


def draw_defects(law: StepLaw, dense: np.ndarray, rng=None) -> str | None:
    """What is wrong with dense draws ``(..., d, d)`` of ``law`` (``None`` when nothing): not finite, not orthogonal
    to rounding (``orthogonal = True``), or expanding (a declared contraction, ``||M||_op > 1``)."""
    rng = np.random.default_rng(0) if rng is None else rng
    if not np.all(np.isfinite(dense)):
        bad = int(np.sum(~np.isfinite(dense)))
        return f"draws are not finite ({bad} of {dense.size} entries NaN or ±inf)"
    d = dense.shape[-1]
    if law.orthogonal:
        if d < _EXACT_BELOW:
            err = float(np.max(np.abs(np.einsum("...ji,...jk->...ik", dense, dense) - np.eye(d)), initial=0.0))
        else:
            x = rng.standard_normal((16, d))
            x /= np.linalg.norm(x, axis=-1, keepdims=True)
            err = max(float(np.max(np.abs(np.linalg.norm(dense @ x.T, axis=-2) - 1), initial=0.0)),
                      float(np.max(np.abs(np.linalg.norm(np.swapaxes(dense, -1, -2) @ x.T, axis=-2) - 1), initial=0.0)))
        if not err <= ORTHO_TOL:
            return (f"draws are not orthogonal: max |MᵀM − I| = {err:.3g} > {ORTHO_TOL:g} (a law that is not orthogonal "
                    "declares orthogonal = False and must be a contraction)")
    else:
        top = float(np.max(_op_norms(dense, rng), initial=0.0))
        if not top <= 1 + ORTHO_TOL:
            return f"draws expand: ||M||_op = {top:.6g} > 1 (orthogonal = False declares a contraction, ||M||_op ≤ 1)"
    return None


def validate_law(law, d: int | None = None, *, label: str = "family") -> None:
    """Refuse (:class:`InvalidLaw`, one line starting with ``label``) a law that is not what it claims.

    Checks, in order: ``law`` is a :class:`StepLaw`; its ``d`` is an integer in ``[2, 65536]`` equal to ``d`` (the
    dimension asked for, when given); its declarations are booleans; six draws of ``sample(rng, (2, 3), np)`` are real
    and shaped ``(2, 3) + <step axes>`` (``(2, 3, d, d)`` for a dense law); ``dense`` of them is ``(6, d, d)``, finite,
    and orthogonal to rounding (or, for ``orthogonal = False``, a contraction); a pathwise law's ``apply`` equals the
    dense matrix times a vector; a closed-form ``mean()`` is a finite real ``d × d`` array.  Anything the law's code
    raises meanwhile is contained (:func:`contained`).
    """
    if not isinstance(law, StepLaw):
        raise InvalidLaw(f"{label}: built a {type(law).__name__}, not a StepLaw (a factory returns a StepLaw instance)")
    with contained(f"{label}: its d"):
        ld = law.d
    if isinstance(ld, bool) or not isinstance(ld, (int, np.integer)) or not 2 <= ld <= MAX_DIM:
        raise InvalidLaw(f"{label}: the law's d = {ld!r} is not an integer in [2, {MAX_DIM}]")
    if d is not None and int(ld) != int(d):
        raise InvalidLaw(f"{label}: built a law of d = {ld} when d = {d} was asked for (the factory must honour d)")
    ld = int(ld)
    with contained(f"{label}: its declarations"):
        _declarations(law, label)
    nd = int(law.step_ndim)
    rng = np.random.default_rng(20260)
    with contained(f"{label}: sample"):
        raw = law.sample(np.random.default_rng(7), _PROBE_SHAPE, np)
    raw = _real(raw, "draws", label)
    if raw.ndim != len(_PROBE_SHAPE) + nd or raw.shape[:2] != _PROBE_SHAPE or (nd == 2 and raw.shape[2:] != (ld, ld)):
        want = f"(2, 3, {ld}, {ld})" if nd == 2 else f"(2, 3) plus {nd} step ax{'is' if nd == 1 else 'es'}"
        raise InvalidLaw(f"{label}: sample(rng, (2, 3)) returned shape {raw.shape}, expected {want} (d = {ld})")
    flat = raw.reshape((6,) + raw.shape[2:])
    with contained(f"{label}: dense"):
        dense = law.dense(flat, np.random.default_rng(11))
    dense = _real(dense, "dense draws", label)
    if dense.shape != (6, ld, ld):
        raise InvalidLaw(f"{label}: dense(6 draws) returned shape {dense.shape}, expected (6, {ld}, {ld}) (d = {ld})")
    with np.errstate(all="ignore"):  # huge finite entries overflow to inf: refused, not warned about
        why = draw_defects(law, dense.astype(float), rng)
    if why is not None:
        raise InvalidLaw(f"{label}: {why}")
    if law.pathwise:
        x = rng.standard_normal((6, ld))
        with contained(f"{label}: apply"):
            y = _real(law.apply(flat, x), "apply(step, x)", label)
        if y.shape != (6, ld) or not np.allclose(y, np.einsum("nab,nb->na", dense, x), atol=1e-8, rtol=1e-8):
            raise InvalidLaw(f"{label}: apply(step, x) disagrees with dense(step) @ x (shape {y.shape})")
    if law.has_exact_mean:
        with contained(f"{label}: mean()"):
            mean = law.mean()
        mean = _real(mean, "mean()", label, array=False)
        if mean.shape != (ld, ld) or not np.all(np.isfinite(mean)):
            raise InvalidLaw(f"{label}: mean() is not a finite {ld} × {ld} array (shape {mean.shape})")


def user_files(family) -> frozenset[str]:
    """The source files of the laws a ``family`` option names (a name, ``"module:Factory"``, a law instance, or a
    list or comma list of them) that are not this package's: where a traceback through them is the user's code."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if family is None:
        laws = []
    elif isinstance(family, str):
        laws = [x.strip() for x in family.split(",")]
    else:
        laws = list(family) if isinstance(family, (list, tuple)) else [family]
    out = set()
    for entry in laws:
        objs = []
        if isinstance(entry, str):
            mod = sys.modules.get(entry.partition(":")[0]) if ":" in entry else None
            objs = [mod] if mod is not None else []
        else:
            objs = [entry if isinstance(entry, type) or callable(entry) and not isinstance(entry, StepLaw) else type(entry)]
        for obj in objs:
            with contextlib.suppress(TypeError, OSError):
                f = os.path.abspath(inspect.getfile(obj))
                if not f.startswith(here + os.sep):
                    out.add(f)
    return frozenset(out)


@contextlib.contextmanager
def user_code(files: frozenset[str], flag: str = "--family") -> Iterator[None]:
    """Inside the block a check runs; an exception (or ``SystemExit``) whose traceback passes through one of
    ``files`` (:func:`user_files`) is the user's law failing: :class:`InvalidLaw` ``"<flag>: …"``, not our bug.
    A ``KeyboardInterrupt`` is the law's only when raised in the user's code itself (the innermost frame)."""
    try:
        yield
    except InvalidLaw as e:  # a guarded draw refused mid-run (guarded): named by the option
        raise InvalidLaw(f"{flag}: {str(e).removeprefix('--family: ')}") from None
    except InvalidInput:
        raise
    except BaseException as e:  # noqa: BLE001  (a user's code may raise anything)
        tb, hit, last = e.__traceback__, None, None
        while tb is not None:
            last = os.path.abspath(tb.tb_frame.f_code.co_filename)
            if last in files:
                hit = last
            tb = tb.tb_next
        if hit is None or (isinstance(e, KeyboardInterrupt) and last != hit):
            raise
        raise InvalidLaw(f"{flag}: the law's code ({os.path.basename(hit)}) raised {exception_line(e)} while the check "
                         "ran") from None


def trusted(law, d: int | None = None, label: str = "family", *, builtin: bool = False):
    """``law`` itself once :func:`validate_law` passes it; a registered built-in law (``builtin``, see
    :func:`stylized.laws.registry.is_builtin`) is not probed."""
    if not builtin:
        validate_law(law, d, label=label)
    return law


_GUARDS: dict[type, type] = {}


def _check_draws(law, x, shape: tuple | None, xp, what: str) -> None:
    """A later draw of a guarded law: an array of ``shape`` plus the step axes, real, finite, and (dense draws)
    norm-preserving on one probe vector (orthogonal) or not expanding it (a declared contraction)."""
    label = f"--family: {law.name}: {what}"  # raised wherever the law is used: named by the option
    if xp is np and not isinstance(x, np.ndarray):
        raise InvalidLaw(f"{label} returned a {type(x).__name__}, not a NumPy array")
    dtype = getattr(x, "dtype", None)
    if dtype is None or np.dtype(dtype).kind not in "biuf":
        raise InvalidLaw(f"{label} returned dtype {dtype}; a step law's draws are real numbers")
    if shape is None:  # dense(): (n, d, d), or the draws' leading axes plus (d, d)
        shape, nd = tuple(x.shape[:-2]), 2
    else:
        nd = law.step_ndim
    want = tuple(shape) + ((law.d, law.d) if nd == 2 else tuple(x.shape[len(shape):]))
    if tuple(x.shape) != want or len(x.shape) != len(shape) + nd:
        raise InvalidLaw(f"{label} returned shape {tuple(x.shape)}, expected {tuple(shape)} plus the step axes "
                         f"(d = {law.d})")
    if dtype.kind == "f" and not bool(xp.all(xp.isfinite(x))):
        raise InvalidLaw(f"{label} returned draws that are not finite (NaN or ±inf)")
    if law.step_ndim == 2 and x.size and dtype.kind == "f":
        u = xp.asarray(np.full(law.d, law.d ** -0.5))
        with np.errstate(all="ignore"):  # huge finite entries overflow to inf: refused below, not warned about
            norms = xp.sqrt(xp.sum((x @ u) ** 2, axis=-1))
        bad = xp.any(xp.abs(norms - 1) > 1e-6) if law.orthogonal else xp.any(norms > 1 + 1e-6)
        if bool(bad):
            raise InvalidLaw(f"{label} returned draws that " + ("are not orthogonal (||M u|| ≠ 1)" if law.orthogonal
                                                                else "expand (||M u|| > 1 for a declared contraction)"))


def _reguard(cls: type, state: dict):
    """Unpickle a guarded law: the user's law rebuilt from its fields, guarded again."""
    law = object.__new__(cls)
    for k, v in state.items():
        object.__setattr__(law, k, v)
    return guarded(law)


def guarded(law: StepLaw) -> StepLaw:
    """``law`` as an instance of a subclass whose :meth:`sample` and :meth:`dense` validate every draw they return
    (:class:`InvalidLaw` naming the property) and contain what the law's code raises: a user's law is validated at
    each use, not only by the first draws :func:`validate_law` probes.  Name, fields, declarations and every other
    method are the law's own; the guarded law pickles (workers of a sweep rebuild it)."""
    cls = type(law)
    if getattr(cls, "_stylized_guarded", False):
        return law
    sub = _GUARDS.get(cls)
    if sub is None:
        def sample(self, xrng, shape, xp=np):
            with contained(f"--family: {self.name}: sample"):
                x = cls.sample(self, xrng, shape, xp)
            _check_draws(self, x, tuple(shape) if isinstance(shape, (tuple, list)) else (shape,), xp, "sample")
            return x

        def dense(self, draws, random_state=None):
            with contained(f"--family: {self.name}: dense"):
                m = cls.dense(self, draws, random_state)
            n = int(np.prod(np.shape(draws)[: np.ndim(draws) - self.step_ndim]))
            _check_draws(self, m, None, np, "dense")
            if int(np.prod(np.shape(m)[:-2])) != n:
                raise InvalidLaw(f"--family: {self.name}: dense of {n} draws returned shape {np.shape(m)}")
            return m

        def reduce(self):
            state = dict(getattr(self, "__dict__", {}))
            return _reguard, (cls, state)

        sub = type(cls.__name__, (cls,), {"sample": sample, "dense": dense, "__reduce__": reduce,
                                          "_stylized_guarded": True, "__module__": cls.__module__,
                                          "__qualname__": cls.__qualname__, "__doc__": cls.__doc__})
        _GUARDS[cls] = sub
    out = object.__new__(sub)
    for k, v in getattr(law, "__dict__", {}).items():
        object.__setattr__(out, k, v)
    return out
