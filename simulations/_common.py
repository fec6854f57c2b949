"""Shared pieces of the experiments: family options, limits, error-bar rows.

Figures are drawn and saved through :mod:`stylized.harness.plotting` (one theme, PNG and PDF); there is no second style here.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
from dataclasses import dataclass

import numpy as np

from stylized import InvalidInput
from stylized.core.key_values import KeyValues
from stylized.core.montecarlo import check_positive_int
from stylized.core.options import Float, Int, LawRange, Spec
from stylized.harness.registry import Check, Option, add_validator
from stylized.laws.families import FAMILY_NAMES, StepLaw, law_names, make_family
from stylized.laws.registry import is_builtin, resolve_law
from stylized.laws.trust import contained, guarded, trusted

__all__ = ["errorbar_rows", "LawChoice", "law_option", "law_at", "family_options", "family_from_params", "families_from_params", "validate_families",
           "unknown_law_params",
           "check_reference", "default_route_length", "joint_passes", "law_setting", "limits", "finite"]


@dataclass(frozen=True)
class LawChoice(Spec):
    """Parses ``--family``: a registered law name (:func:`stylized.laws.families.law_names`), an installed
    ``stylized.laws`` entry point, ``package.module:Factory``, or (from Python) a :class:`StepLaw` instance;
    ``multi`` takes a comma list of them, or ``all`` (the six canonical families, :data:`FAMILY_NAMES`).
    A :class:`~stylized.core.options.Spec` of kind ``choice``/``choices`` over the registered names, which also
    takes a law by module path or as an object.

    >>> LawChoice.of(multi=True)("householder,cayley")
    ['householder', 'cayley']
    """

    @classmethod
    def of(cls, multi: bool = False, allow_all: bool = True) -> LawChoice:
        names = tuple(law_names()) + (("all",) if multi and allow_all else ())
        return cls("choices" if multi else "choice", choices=names)

    @property
    def multi(self) -> bool:
        return self.kind == "choices"

    def describe(self) -> str:
        return super().describe() + ", or package.module:Factory"

    def _one(self, x):
        if isinstance(x, StepLaw):
            return x
        if not isinstance(x, str) or not x.strip() or not x.strip().isprintable():
            raise self._fail(x)
        x = x.strip()
        if x in self.choices:
            return x
        if ":" in x:
            try:
                resolve_law(x)  # imports it now: a missing module is refused before any work
            except ValueError as e:
                raise InvalidInput(f"{str(e).splitlines()[0]}; {self._fail(x)}") from None
            return x
        raise self._fail(x)

    def __call__(self, value):
        if isinstance(value, StepLaw):
            return [value] if self.multi else value
        if isinstance(value, bytes) or value is None:
            raise self._fail(value)
        items = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else [value]
        out = [self._one(x) for x in items if not (isinstance(x, str) and not x.strip())]
        if not out or len(out) > self.max_len or (not self.multi and len(out) != 1):
            raise self._fail(value)
        return out if self.multi else out[0]


def law_option(default, multi: bool = False, help: str | None = None, allow_all: bool = True) -> Option:
    """The ``--family`` option: any step law (:class:`LawChoice`)."""
    text = help or ("step law: a registered name (check --list shows them), package.module:Factory, or a StepLaw "
                    "from Python" + (" (comma list" + (", or 'all' for the six canonical families)" if allow_all else ")")
                                     if multi else ""))
    return Option("family", default, text, LawChoice.of(multi, allow_all))


def _law_range(arg: str, strict: Spec) -> LawRange:
    """Option ``arg``'s spec: any finite number, ``strict`` for the built-in law that takes it (:data:`_LAW_ARG`)."""
    return LawRange("float", strict=strict, law=next(k for k, v in _LAW_ARG.items() if v == arg))


def family_options(family_default: str = "householder", d_default: int = 64, multi: bool = False) -> tuple[Option, ...]:
    """The options that pick a step family and its parameters."""
    return (
        law_option(family_default, multi),
        Option("d", d_default, "dimension d (even for SO(2) families; a StepLaw given from Python brings its own)",
               Int(2, 4096, size=True)),
        Option("omega", 1.0, "so2-uniform: angle half-width ω in (0, π]", _law_range("omega", Float(0, np.pi, lo_open=True))),
        Option("sigma", 0.5, "so2-normal: angle standard deviation σ > 0 (μ = 0)", _law_range("sigma", Float(0, 1e6, lo_open=True))),
        Option("p", 0.1, "lazy-haar: probability p ∈ (0, 1] of a Haar step", _law_range("p", Float(0, 1, lo_open=True))),
        Option("base", 10000.0, "rope-random: RoPE base (ω_b = base^(−2b/d))", _law_range("base", Float(1, 1e12, lo_open=True))),
        Option("law_param", None, "a parameter of the step law's factory, KEY=VALUE (repeatable; a user's law "
               "takes its own; an unknown key is refused)", KeyValues()),
    )


def law_at(entry, d: int, params: dict) -> StepLaw:
    """The law ``entry`` (a name, ``module:Factory`` or a :class:`StepLaw`) in dimension ``d``.

    A law instance keeps its own parameters; at another ``d`` it is rebuilt with ``dataclasses.replace``."""
    extra = params.get("law_param") or {}
    if isinstance(entry, StepLaw):
        extra = {k: v for k, v in extra.items() if k not in unknown_law_params(entry, extra)}
        law = entry if entry.d == d and not extra else dataclasses.replace(entry, **{**extra, "d": d})
        return law if is_builtin(law) else guarded(law)  # a user's law: every draw validated while a check runs
    return _built_law(entry, d, {**{k: params[k] for k in _FAMILY_ARGS if k in params}, **extra})


def _built_law(name: str, d: int, args: dict) -> StepLaw:
    """``make_family(name, d, **args)``, built once per ``(name, d, args)`` for a registered law: a frozen value
    (as SciPy's frozen distributions are), so the validators and the run of one check share the one object.  A
    user's law, or arguments that do not hash (a per-plane list from Python), is built at every call."""
    key = tuple(args.items())
    try:
        hash(key)
    except TypeError:
        return make_family(name, d, **args)
    return _registered_law(name, d, key) if is_builtin(name) else make_family(name, d, **args)


@functools.lru_cache(maxsize=512)
def _registered_law(name: str, d: int, key: tuple) -> StepLaw:
    return make_family(name, d, **dict(key))


def unknown_law_params(entry, keys) -> list[str]:
    """The keys among ``keys`` (``--law-param``) that the law ``entry`` (a name, ``module:Factory`` or a law
    object) does not take: not a parameter of its factory (one taking ``**kwargs`` takes every key)."""
    factory = type(entry) if isinstance(entry, StepLaw) else resolve_law(entry)
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return []
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return []
    return [k for k in keys if k not in sig.parameters or sig.parameters[k].kind is inspect.Parameter.POSITIONAL_ONLY]


def family_from_params(params: dict, name=None) -> StepLaw:
    """The one law the params name (``name`` overrides ``params["family"]``), at ``params["d"]``."""
    entry = params["family"] if name is None else name
    if isinstance(entry, list):
        entry = entry[0]
    return law_at(entry, params["d"], params)


def families_from_params(params: dict) -> list[StepLaw]:
    """Every law ``params["family"]`` names (``all``: the six canonical families), at ``params["d"]``."""
    names = params["family"]
    names = [names] if isinstance(names, (str, StepLaw)) else list(names)
    if names == ["all"]:
        names = list(FAMILY_NAMES)
    return [family_from_params(params, n) for n in names]


_FAMILY_ARGS = ("omega", "sigma", "p", "base")  # the family parameters among a check's options (family_options)
_LAW_ARG = {"so2-uniform": "omega", "so2-normal": "sigma", "lazy-haar": "p", "rope-random": "base"}


def law_setting(law, params: dict) -> str:
    """``law``'s name with the family option that sets it, as a refusal names it: ``"so2-uniform (--omega 0.001)"``."""
    arg = _LAW_ARG.get(getattr(law, "name", ""))
    return f"{law.name} (--{arg} {params[arg]:g})" if arg in params and isinstance(params[arg], (int, float)) else law.name


@functools.lru_cache(maxsize=512)
def _family_refusal(name: str, d: int, args: tuple) -> str | None:
    """Why ``make_family(name, d, **args)`` refuses (its message), or ``None`` when it builds."""
    try:
        trusted(_built_law(name, d, dict(args)), d, f"family {name!r}", builtin=is_builtin(name))
    except ValueError as e:
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    return None


def validate_families(params: dict) -> None:
    """Build every step family the run will build (each ``family`` × each ``d``, with the family parameters
    among ``params``) and turn a refusal into :class:`~stylized.InvalidInput` naming the option: the limits
    between ``--family``, ``--d`` and the family parameters (an odd ``d`` for an SO(2) family) are found
    before any work, as ``--dry-run`` and ``stylized.run`` need.  Params without ``family`` and ``d``: nothing.

    >>> validate_families({"family": ["householder", "so2-uniform"], "d": [16, 13], "omega": 1.0})
    Traceback (most recent call last):
    ...
    stylized.InvalidInput: --d: d must be even for SO(2) blocks (d = 2, 4, 6, …), got 13 (with --family so2-uniform)
    """
    if "family" not in params or "d" not in params:
        return
    names = [params["family"]] if isinstance(params["family"], (str, StepLaw)) else list(params["family"])
    names = list(FAMILY_NAMES) if names == ["all"] else names
    ds = params["d"] if isinstance(params["d"], (list, tuple)) else [params["d"]]
    extra = params.get("law_param") or {}
    if extra:  # a key no named law takes is refused (with several laws, each takes the keys it knows)
        with contained("--law-param"):
            unknown = set.intersection(*(set(unknown_law_params(name, extra)) for name in names))
        if unknown:
            label = ",".join(n if isinstance(n, str) else type(n).__name__ for n in names)
            raise InvalidInput(f"--law-param: unknown key {sorted(unknown)[0]!r}: no law of --family {label[:80]} "
                               "takes it")
    args = tuple({**{k: params[k] for k in _FAMILY_ARGS if k in params}, **extra}.items())
    try:
        hash(args)
        refusal = _family_refusal
    except TypeError:  # a per-plane list given from Python: not cached
        refusal = _family_refusal.__wrapped__
    for name in names:
        for d in ds:
            if isinstance(name, StepLaw):  # a law from Python: rebuilt at d only if d differs (law_at)
                try:
                    with contained(f"family {type(name).__name__}"):
                        trusted(law_at(name, d, params), d, f"family {type(name).__name__}", builtin=is_builtin(name))
                    why = None
                except (ValueError, TypeError) as e:
                    why = str(e).splitlines()[0] if str(e) else type(e).__name__
            else:
                why = refusal(name, d, args)
            if why is not None:
                why = why.removeprefix("--family: ")  # a guarded draw names the option itself (stylized.laws.trust)
                word = why.split()[0] if why.split() else ""
                raised = why.partition(" raised ")[2]  # a user's factory refusing a parameter it was given
                hit = next((k for k in (*extra, *_FAMILY_ARGS) if re.search(rf"\b{re.escape(k)}\b", raised)), word)
                flag = ("--law-param" if hit in extra else f"--{hit}" if hit in ("d", *_FAMILY_ARGS)
                        else "--family")
                raise InvalidInput(f"{flag}: {why}" + ("" if flag == "--family" else f" (with --family {name})"))


@add_validator
def _families_of_experiments(check: Check, params: dict) -> None:
    """:func:`validate_families` for this package's checks (every ``Check.parse_params`` applies it); the refusal
    also gives the option's allowed range."""
    if check.module.split(".")[0] != __name__.split(".")[0]:
        return
    if "family" in params:  # a built-in law's own range (--omega ≤ π for so2-uniform), only where that law runs
        names = [params["family"]] if isinstance(params["family"], (str, StepLaw)) else list(params["family"])
        names = list(FAMILY_NAMES) if names == ["all"] else names
        for o in check.options:
            if isinstance(o.spec, LawRange) and o.spec.law in names and params.get(o.name) is not None:
                try:
                    o.spec.strict(params[o.name])
                except ValueError as e:
                    raise InvalidInput(f"{o.flag}: {e} (with --family {o.spec.law})") from None
    try:
        validate_families(params)
    except InvalidInput as e:
        flag = str(e).split(":")[0]
        allowed = next((o.allowed() for o in check.options if o.flag == flag), "")
        if not allowed:
            raise
        raise InvalidInput(f"{e}; {flag} takes {allowed}") from None
    needs = check.extra.get("needs", ())
    if needs and "family" in params and "d" in params:  # the capabilities the check declares it needs
        names = [params["family"]] if isinstance(params["family"], (str, StepLaw)) else list(params["family"])
        names = list(FAMILY_NAMES) if names == ["all"] else names
        d0 = params["d"][0] if isinstance(params["d"], (list, tuple)) else params["d"]
        for name in names:
            try:
                require(law_at(name, d0, params), needs)
            except ValueError as e:
                allowed = next((o.allowed() for o in check.options if o.name == "family"), "")
                raise InvalidInput(f"--family: {e}" + (f"; --family takes {allowed}" if allowed else "")) from None


NEEDS = {"orthogonal": "orthogonal steps", "iid": "i.i.d. steps", "planes": "commuting SO(2) planes",
         "isotropic": "an isotropic law"}
"""The capabilities a check may declare it needs (``Check.extra["needs"]``), in words."""


def require(law: StepLaw, needs) -> None:
    """Refuse ``law`` (one ``ValueError`` naming the property) unless it declares every capability in ``needs``."""
    for cap in needs:
        if not getattr(law, cap, False):
            raise ValueError(f"family {law.name}: this check needs {NEEDS.get(cap, cap)} ({cap}=True)")



def check_reference(law: StepLaw) -> None:
    """Refuse (``ValueError`` naming ``--family``) a law whose post-mixing score law has no closed form and cannot be
    estimated either (it never mixes, or too slowly for the Monte Carlo reference of
    :func:`stylized.theory.score_reference.estimated_far_score_law`): found before any work, as the run would find it."""
    from stylized.theory.score_reference import EstimatedScoreLaw, _reference_length

    if not issubclass(law.post_mixing_class, EstimatedScoreLaw):
        return

    try:
        _reference_length(law)
    except ValueError as e:
        raise ValueError(f"--family: {str(e).splitlines()[0]}") from None


def default_route_length(params: dict, law: StepLaw, option: str, setting: str) -> int:
    """The route length ``params[option]`` (an integer ≥ 1), else ``⌈3·W(0.01)⌉`` of ``law``: refused, naming the
    option (``"--far-n: …"``) and the law by ``setting``, when it never mixes (γ = 0, W = ∞) or that default exceeds
    10^5 steps (the route length is a size too: refused before allocating it)."""
    if params[option] is not None:
        return check_positive_int(option, params[option], 1)
    flag = "--" + option.replace("_", "-")
    W = law.mixing_window(0.01)
    if not math.isfinite(W):
        raise ValueError(f"{flag}: {setting} never mixes (γ = 0), so there is no default ⌈3·W(0.01)⌉; give {flag}")
    if 3 * W > 10**5:
        raise ValueError(f"{flag}: the default ⌈3·W(0.01)⌉ = {3 * W:.3g} for {setting} exceeds 10^5 (it mixes too "
                         f"slowly); give {flag}, or a faster-mixing family parameter")
    return int(math.ceil(3 * W))


def joint_passes(j, lo: float, hi: float) -> bool:
    """The joint interval ``j`` holds a closed-form theory (``lo = hi``) or meets an estimated one's interval."""
    return bool(j.contains(lo)) if lo == hi else bool(j.ci_low <= hi and lo <= j.ci_high)


def limits(check: Check) -> Check:
    """``check`` with its ``validate`` (the limits between options: a ``ValueError`` ``"--opt: …"``) refusing in one
    line that ends with the allowed values of every option it names (``…; --D takes an integer in [1, 4096]``), as the
    range refusals do.  Register it as ``register(limits(Check(…, validate=_validate)))``.

    >>> def a_below_b(p):
    ...     if p["a"] >= p["b"]:
    ...         raise ValueError("--a: must be < --b")
    >>> c = limits(Check("toy", "C0", "", (Option("a", 1, "", Int(0, 9)), Option("b", 2, "", Int(1, 9))),
    ...                  run=lambda p, **k: {}, validate=a_below_b))
    >>> c.parse_params({"a": 5})
    Traceback (most recent call last):
    ...
    stylized.InvalidInput: --a: must be < --b; --a takes an integer in [0, 9]; --b takes an integer in [1, 9]
    """
    if check.validate is None:
        return check
    validate, options = check.validate, check.options

    def with_ranges(params: dict) -> None:
        try:
            validate(params)
        except ValueError as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            at = {o.flag: m.start() for o in options if o.allowed() and o.allowed() not in msg
                  and (m := re.search(re.escape(o.flag) + r"(?![\w-])", msg))}
            named = sorted(at, key=at.get)  # in the order the message names them
            allowed = {o.flag: o.allowed() for o in options}
            raise InvalidInput("; ".join([msg, *(f"{flag} takes {allowed[flag]}" for flag in named)])) from None

    with_ranges.__doc__ = validate.__doc__
    return dataclasses.replace(check, validate=with_ranges)

def errorbar_rows(ax, x, rows: list[dict], floor: float | None = None, **kw):
    """Plot each row's ``estimate`` at ``x`` with its interval ``[ci_low, ci_high]`` as error bars.

    ``floor`` clips the estimate and the lower end from below (for log axes).
    """
    est = np.array([r["estimate"] for r in rows], dtype=float)
    lo = np.array([r["ci_low"] for r in rows], dtype=float)
    hi = np.array([r["ci_high"] for r in rows], dtype=float)
    if floor is not None:
        est, lo = np.maximum(est, floor), np.maximum(lo, floor)
    return ax.errorbar(x, est, yerr=[est - lo, hi - est], **kw)


def finite(x) -> np.ndarray:
    """``x`` as floats with ``None`` → NaN."""
    return np.asarray([np.nan if v is None else v for v in x], dtype=float)
