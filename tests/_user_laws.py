"""Misbehaving user laws, importable as ``tests._user_laws:NAME`` (the fuzz of ``tests/harness/test_user_code_fuzz.py``).

Each entry of :data:`CASES` is ``(name, when)``: the module attribute ``name`` is a law class or a factory, and
``when`` says where it must be refused: ``"probe"`` (before any work: ``--dry-run`` refuses it) or ``"run"`` (its
first draws are fine; it fails later, so only a run can refuse it).  :data:`VALID` are laws that must run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stylized import StepLaw

CASES: list[tuple[str, str]] = []
VALID: list[str] = []
CALLS: dict[str, int] = {}


@dataclass(frozen=True)
class Reflect(StepLaw):
    """A valid user law: Householder reflections as dense matrices."""

    d: int

    def sample(self, xrng, shape, xp=np):
        g = xrng.standard_normal(tuple(shape) + (self.d,))
        w = g / np.sqrt((g * g).sum(-1, keepdims=True))
        return np.eye(self.d) - 2.0 * w[..., :, None] * w[..., None, :]


@dataclass(frozen=True)
class ReflectVec(StepLaw):
    """A valid structured user law: a reflection drawn as its unit vector (``step_ndim = 1``)."""

    d: int
    step_ndim = 1

    def sample(self, xrng, shape, xp=np):
        g = xrng.standard_normal(tuple(shape) + (self.d,))
        return g / np.sqrt((g * g).sum(-1, keepdims=True))

    def dense(self, draws, random_state=None):
        w = np.asarray(draws, dtype=float)
        return np.eye(self.d) - 2.0 * w[..., :, None] * w[..., None, :]

    def apply(self, step, x, *, transpose=False, xrng=None):
        return x - 2.0 * (step * x).sum(-1, keepdims=True) * step


def _add(name: str, obj, when: str = "probe", valid: bool = False) -> None:
    globals()[name] = obj
    if valid:
        VALID.append(name)
    else:
        CASES.append((name, when))


def _with_sample(base, fn, **attrs):
    def sample(self, xrng, shape, xp=np):
        return fn(base.sample(self, xrng, shape, xp), tuple(shape), self.d)

    return dataclass(frozen=True)(type("Bad", (base,), {"sample": sample, **attrs}))


def _raiser(exc):
    def fn(*_):
        raise exc() if isinstance(exc, type) else exc

    return fn


class Custom(BaseException):
    """A user's own BaseException subclass."""


_DRAWS = {  # draws that are invalid whatever the law declares
    "nan_all": lambda m, s, d: np.full_like(m, np.nan),
    "nan_one": lambda m, s, d: np.where(np.arange(m.size).reshape(m.shape) == 7, np.nan, m),
    "inf_one": lambda m, s, d: np.where(np.arange(m.size).reshape(m.shape) == 3, np.inf, m),
    "neg_inf": lambda m, s, d: np.full_like(m, -np.inf),
    "complex_i": lambda m, s, d: m * 1j,
    "complex_zero_imag": lambda m, s, d: m.astype(complex),
    "complex_rot": lambda m, s, d: m + 1e-3j,
    "object_dtype": lambda m, s, d: m.astype(object),
    "string_dtype": lambda m, s, d: m.astype(str),
    "none": lambda m, s, d: None,
    "python_list": lambda m, s, d: m.tolist(),
    "python_float": lambda m, s, d: 1.0,
    "a_string": lambda m, s, d: "identity",
    "a_dict": lambda m, s, d: {"m": m},
    "wrong_d_minus": lambda m, s, d: m[..., 1:, 1:],
    "wrong_d_plus": lambda m, s, d: np.pad(m, [(0, 0)] * len(s) + [(0, 1), (0, 1)]),
    "nonsquare": lambda m, s, d: m[..., :-1],
    "no_batch": lambda m, s, d: np.eye(d),
    "flattened": lambda m, s, d: m.reshape(s + (d * d,)),
    "extra_axis": lambda m, s, d: m[..., None, :, :],
    "batch_swapped": lambda m, s, d: np.swapaxes(m.reshape(s + (d, d)), 0, -3) if len(s) > 1 else m[None],
    "first_axis_only": lambda m, s, d: m.reshape((int(np.prod(s)), d, d)),
    "empty": lambda m, s, d: np.empty((0, d, d)),
    "scalar_zero": lambda m, s, d: np.float64(0.0),
    "gaussian": lambda m, s, d: np.random.default_rng(0).standard_normal(m.shape),
    "huge": lambda m, s, d: m * 1e308,
    "scaled_up": lambda m, s, d: 1.01 * m,
    "doubled": lambda m, s, d: 2.0 * m,
    "shear": lambda m, s, d: m + np.triu(np.ones((d, d)), 1),
    "negative_def": lambda m, s, d: -2.0 * m,
}
_ORTHO_ONLY = {  # draws invalid only for a law that declares orthogonal = True (a contraction may draw them)
    "scaled_down": lambda m, s, d: 0.99 * m,
    "zero": lambda m, s, d: np.zeros_like(m),
    "perturbed": lambda m, s, d: m * (1 - 1e-6),
    "half": lambda m, s, d: 0.5 * m,
    "projection": lambda m, s, d: np.broadcast_to(np.diag([1.0] + [0.0] * (d - 1)), m.shape).copy(),
}
for _k, _f in _DRAWS.items():
    _add(f"draws_{_k}", _with_sample(Reflect, _f))
    _add(f"contraction_draws_{_k}", _with_sample(Reflect, _f, orthogonal=False))
for _k, _f in _ORTHO_ONLY.items():
    _add(f"draws_{_k}", _with_sample(Reflect, _f))
    _add(f"valid_contraction_{_k}", _with_sample(Reflect, _f, orthogonal=False), valid=True)

_EXCEPTIONS = {
    "ValueError": ValueError("bad"), "IndexError": IndexError("index 9 is out of bounds"), "MemoryError": MemoryError(),
    "KeyboardInterrupt": KeyboardInterrupt(), "SystemExit0": SystemExit(0), "SystemExit1": SystemExit(1),
    "SystemExitNone": SystemExit(None), "SystemExitStr": SystemExit("bye"), "ZeroDivisionError": ZeroDivisionError(),
    "RecursionError": RecursionError("maximum recursion depth exceeded"), "AssertionError": AssertionError(),
    "NotImplementedError": NotImplementedError(), "StopIteration": StopIteration(),
    "LinAlgError": np.linalg.LinAlgError("SVD did not converge"), "TypeError": TypeError("unsupported"),
    "Custom": Custom("mine"), "OSError": OSError(28, "No space left on device"), "UnicodeError": UnicodeError(),
    "FloatingPointError": FloatingPointError(), "RuntimeWarning": RuntimeWarning("as error"),
    "GeneratorExit": GeneratorExit(), "AttributeError": AttributeError("shape"), "KeyError": KeyError("k"),
    "OverflowError": OverflowError(), "ImportError": ImportError("No module named 'torch'"),
}
for _k, _e in _EXCEPTIONS.items():
    _add(f"sample_raises_{_k}", _with_sample(Reflect, _raiser(_e)))

for _k in ("ValueError", "SystemExit0", "KeyboardInterrupt", "MemoryError", "IndexError", "Custom", "TypeError",
           "RecursionError"):
    def _post_init(self, _e=_EXCEPTIONS[_k]):
        raise _e

    _add(f"init_raises_{_k}", dataclass(frozen=True)(type("Bad", (Reflect,), {"__post_init__": _post_init})))

    def _factory(d, _e=_EXCEPTIONS[_k], **_):
        raise _e

    _add(f"factory_raises_{_k}", _factory)

for _cap, _value in (("orthogonal", "yes"), ("isotropic", None), ("planes", 1), ("pathwise", "no"), ("iid", 0.5),
                     ("step_ndim", 3), ("step_ndim", "2"), ("step_ndim", True), ("step_ndim", -1), ("orthogonal", [])):
    _add(f"declares_{_cap}_{type(_value).__name__}_{str(_value).replace('-', 'm')}",
         dataclass(frozen=True)(type("Bad", (Reflect,), {_cap: _value})))

for _k, _fn in {"none": lambda d, **_: None, "int": lambda d, **_: 42, "str": lambda d, **_: "householder",
                "class": lambda d, **_: Reflect, "array": lambda d, **_: np.eye(d), "list": lambda d, **_: [Reflect(d)],
                "wrong_d": lambda d, **_: Reflect(d + 1), "d_one": lambda d, **_: Reflect(1),
                "d_float": lambda d, **_: Reflect(float(d)), "d_str": lambda d, **_: Reflect(str(d)),
                "d_bool": lambda d, **_: Reflect(True), "d_huge": lambda d, **_: Reflect(10**9),
                "d_negative": lambda d, **_: Reflect(-d), "abstract": lambda d, **_: StepLaw(d),
                "exit_in_return": lambda d, **_: (_ for _ in ()).throw(SystemExit(0))}.items():
    _add(f"factory_returns_{_k}", _fn)

_STRUCT = {
    "dense_raises": {"dense": lambda self, draws, random_state=None: (_ for _ in ()).throw(IndexError("dense"))},
    "dense_wrong_shape": {"dense": lambda self, draws, random_state=None: np.eye(self.d)},
    "dense_complex": {"dense": lambda self, draws, random_state=None: ReflectVec.dense(self, draws) * 1j},
    "dense_nan": {"dense": lambda self, draws, random_state=None: ReflectVec.dense(self, draws) * np.nan},
    "dense_exit": {"dense": lambda self, draws, random_state=None: (_ for _ in ()).throw(SystemExit(0))},
    "apply_raises": {"apply": lambda self, step, x, *, transpose=False, xrng=None: (_ for _ in ()).throw(KeyError(1))},
    "apply_wrong": {"apply": lambda self, step, x, *, transpose=False, xrng=None: x},
    "apply_wrong_shape": {"apply": lambda self, step, x, *, transpose=False, xrng=None: x[..., :-1]},
    "apply_nan": {"apply": lambda self, step, x, *, transpose=False, xrng=None: x * np.nan},
    "vector_not_unit": {"sample": lambda self, xrng, shape, xp=np: 2.0 * ReflectVec.sample(self, xrng, shape)},
    "vector_wrong_d": {"sample": lambda self, xrng, shape, xp=np: ReflectVec.sample(self, xrng, shape)[..., 1:]},
    "vector_complex": {"sample": lambda self, xrng, shape, xp=np: ReflectVec.sample(self, xrng, shape) * 1j},
}
for _k, _attrs in _STRUCT.items():
    _add(f"structured_{_k}", dataclass(frozen=True)(type("Bad", (ReflectVec,), _attrs)))

_MEAN = {"raises": lambda self: (_ for _ in ()).throw(ZeroDivisionError()), "wrong_shape": lambda self: np.eye(2),
         "nan": lambda self: np.full((self.d, self.d), np.nan), "complex": lambda self: 1j * np.eye(self.d),
         "none": lambda self: None, "string": lambda self: "(1 - 2/d) I",
         "exit": lambda self: (_ for _ in ()).throw(SystemExit(0))}
for _k, _m in _MEAN.items():
    _add(f"mean_{_k}", dataclass(frozen=True)(type("Bad", (Reflect,), {"mean": _m})))


def _late(name: str, exc):
    def sample(self, xrng, shape, xp=np):
        CALLS[name] = CALLS.get(name, 0) + 1
        if CALLS[name] > 2:
            raise exc
        return Reflect.sample(self, xrng, shape, xp)

    return dataclass(frozen=True)(type("Late", (Reflect,), {"sample": sample}))


for _k in ("IndexError", "MemoryError", "SystemExit0", "KeyboardInterrupt", "ValueError", "Custom"):
    _add(f"late_{_k}", _late(f"late_{_k}", _EXCEPTIONS[_k]), when="run")

VALID += ["Reflect", "ReflectVec"]


def _late_draws(name: str, fn):
    def sample(self, xrng, shape, xp=np):
        CALLS[name] = CALLS.get(name, 0) + 1
        m = Reflect.sample(self, xrng, shape, xp)
        return fn(m, tuple(shape), self.d) if CALLS[name] > 2 else m

    return dataclass(frozen=True)(type("Late", (Reflect,), {"sample": sample}))


for _k in ("nan_all", "complex_i", "wrong_d_minus", "scaled_up"):
    _add(f"late_draws_{_k}", _late_draws(f"late_draws_{_k}", _DRAWS[_k]), when="run")
