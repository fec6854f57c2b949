"""The registry of paper checks: one :class:`Check` per claim experiment.

A check is declared in an experiment module and registered with :func:`register`.  The
library never names its experiments: :func:`load_checks` finds them through the
``stylized.checks`` entry-point group (:func:`plugins`), which the experiments' package
declares in ``pyproject.toml`` (``simulations = "simulations:check_modules"``, which lists the
modules to import); a source checkout that was not reinstalled is read from its own ``pyproject.toml``.
The CLI, the ``check --all`` runner and ``paper_checks.md`` all read this registry, so a new
check needs nothing but its own module.

A check that needs an optional package (``requires=("torch",)``) is left out when the package
is not installed; an *external* check (``external=True``) only reads a result another command
wrote (the C6 transformer comparison, the bridge) and renders its own ``paper_checks.md`` rows
and section (``table_rows``, ``section``).

A check's ``run(params, *, seed, backend, progress)`` returns a dict with at least
``holds`` (bool), ``rows`` (list of dicts, each with the swept variables under their
option names and ``estimate``, ``ci_low``, ``ci_high``, ``theory``, ``n_samples``) and
``headline`` (dict: ``quantity``, ``estimate``, ``ci_low``, ``ci_high``, ``theory``,
``verdict``), plus any extra keys.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from ..core.backend import BACKENDS
from ..core.errors import InvalidInput
from ..core.options import Spec, check_work, spec_of

__all__ = ["Option", "Mutant", "Theory", "scaled", "Check", "headline", "register", "add_validator", "load_checks", "get_check", "plugins", "load_plugin", "int_list", "float_list", "str_list"]


def int_list(s: str | list) -> list[int]:
    """Parse ``"1,5,20"`` into ``[1, 5, 20]``."""
    if isinstance(s, list):
        return [int(x) for x in s]
    try:
        return [int(float(x)) if float(x).is_integer() else int(x) for x in str(s).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"expected a comma-separated list of integers, got {s!r}") from None


def float_list(s: str | list) -> list[float]:
    """Parse ``"0.1,0.2"`` into ``[0.1, 0.2]``."""
    if isinstance(s, list):
        return [float(x) for x in s]
    try:
        return [float(x) for x in str(s).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"expected a comma-separated list of numbers, got {s!r}") from None


def str_list(s: str | list) -> list[str]:
    """Parse ``"a,b"`` into ``["a", "b"]``."""
    if isinstance(s, list):
        return [str(x) for x in s]
    return [x.strip() for x in str(s).split(",") if x.strip()]


@dataclass(frozen=True)
class Option:
    """A check's option: ``--name value`` on the command line, ``params[name]`` in Python."""

    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def spec(self) -> Spec | Callable[[Any], Any]:
        """The :class:`~stylized.core.options.Spec` that parses and validates this option (generic for plain types)."""
        return spec_of(self.parse, self.default)

    def allowed(self) -> str:
        """The allowed values in words (``'an integer in [1, 10^7]'``), for ``--list`` and ``--help``."""
        return self.spec.describe() if isinstance(self.spec, Spec) else ""


@dataclass(frozen=True)
class Mutant:
    """A deliberately wrong model or theory that must turn a check's ``holds`` false.

    ``patch()`` returns a context manager (usually :func:`unittest.mock.patch` of a name the
    check's module looks up at run time); inside it the check runs on the mutant.  ``params``
    are extra option overrides applied on top of the check's reduced sizes (e.g. ``far_n`` below
    the window), for mutants that are a setting rather than a code change.
    """

    name: str
    description: str
    patch: Callable[[], AbstractContextManager] = nullcontext
    params: dict = field(default_factory=dict)


def patched(module: str, name: str, new) -> Callable[[], AbstractContextManager]:
    """A :attr:`Mutant.patch`: replaces ``module.name`` by ``new`` while the check runs (the check's module
    must look ``name`` up at run time)."""
    from unittest import mock

    return lambda: mock.patch(f"{module}.{name}", new)


@dataclass(frozen=True)
class Theory:
    """A theory a check names, for measuring its power.

    ``perturb(factor)`` returns a context manager under which the check compares with that theory times
    ``factor`` (relative error ``factor − 1``); ``stylized falsify --sensitivity`` finds the smallest error of
    each sign that turns ``holds`` false (:func:`stylized.harness.falsify.sensitivity`).  ``params`` are option
    overrides on top of the sizes it runs at (e.g. the family whose theory it is).  :func:`scaled` builds
    ``perturb`` for a function of the check's module whose return value is the theory.  ``sides``: the signs
    of error that can flip the verdict; a one-sided bound has one (a lower bound is violated only when
    raised, ``(+1,)``; an upper bound only when lowered, ``(-1,)``), the other side holds by construction.
    """

    name: str
    description: str
    perturb: Callable[[float], AbstractContextManager]
    params: dict = field(default_factory=dict)
    sides: tuple[int, ...] = (-1, +1)


def _times(x, factor: float):
    """``x`` times ``factor``: numbers and arrays, elementwise through tuples and lists (``None`` kept)."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (tuple, list)):
        return type(x)(_times(v, factor) for v in x)
    return x * factor


def scaled(module: str, name: str) -> Callable[[float], AbstractContextManager]:
    """A :attr:`Theory.perturb`: ``module.name`` (looked up by the check at run time) returns its value times
    ``factor``."""
    def perturb(factor: float) -> AbstractContextManager:
        orig = getattr(importlib.import_module(module), name)

        def times(*args, **kwargs):
            return _times(orig(*args, **kwargs), factor)

        return patched(module, name, times)()

    return perturb


@dataclass(frozen=True)
class Check:
    """One numerical check of a paper claim."""

    name: str
    claim: str
    statement: str
    options: tuple[Option, ...]
    run: Callable[..., dict]
    plot: Callable[[dict, Path], list[Path]] | None = None
    module: str = ""
    backends: tuple[str, ...] = BACKENDS  # every check runs on every backend unless it says otherwise
    extra: dict = field(default_factory=dict)
    # Falsifiability: mutants that must each turn ``holds`` false, and the option overrides
    # ("reduced sizes") at which the mutation suite and the false-rejection runs use the same test.
    mutants: tuple[Mutant, ...] = ()
    reduced: dict = field(default_factory=dict)
    # Power: the theories it names, each perturbable by a relative error (``stylized falsify --sensitivity``).
    theories: tuple[Theory, ...] = ()
    # Optional packages the check needs (left out of the registry when one is missing).
    requires: tuple[str, ...] = ()
    # External: the result is written by another command; ``run`` only reads it, ``check --all``
    # reports it without rerunning, and ``table_rows(results)`` / ``section(results)`` render its
    # ``paper_checks.md`` rows and section (lists of markdown lines).
    external: bool = False
    table_rows: Callable[[Path], list[str]] | None = None
    section: Callable[[Path], list[str]] | None = None
    # Limits between options (each in range, together not): ``validate(params)`` raises ``InvalidInput``
    # (or ``ValueError``) ``"--opt: …"``; :meth:`parse_params` applies it, so ``--dry-run``, sweeps and
    # ``stylized.run`` refuse such a run before any work, as the run itself would.
    validate: Callable[[dict], None] | None = None

    def defaults(self) -> dict:
        return {o.name: o.default for o in self.options}

    def backend_for(self, preferred: str) -> str:
        """``preferred`` if the check supports it, else the check's first backend."""
        return preferred if preferred in self.backends else self.backends[0]

    def parse_params(self, given: dict | None = None) -> dict:
        """Defaults overridden by ``given`` (strings, lists or values), each parsed and validated by
        its option's spec; then the work estimate is capped (:func:`stylized.core.options.check_work`) and the limits
        between options are applied (every :func:`add_validator` hook, then the check's ``validate``).

        Raises :class:`~stylized.InvalidInput` ``"--opt: must be … in [lo, hi], got '…'"`` (one line) on the
        first bad value or limit.
        """
        params = self.defaults()
        if given is not None and not isinstance(given, dict):
            raise TypeError(f"params must be a dict of option values, got {type(given).__name__}")
        unknown = set(given or {}) - set(params)
        if unknown:
            raise InvalidInput(f"unknown option(s) for check {self.name!r}: {', '.join(sorted(map(str, unknown)))}")
        opts = {o.name: o for o in self.options}
        for k, v in (given or {}).items():
            if v is None:
                continue
            spec = opts[k].spec
            try:
                params[k] = spec(v) if isinstance(spec, Spec) or isinstance(v, (str, list)) else v
            except (ValueError, TypeError, OverflowError) as e:
                raise InvalidInput(f"{opts[k].flag}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        law = (given or {}).get("family")
        if hasattr(law, "step_ndim") and "d" in params and (given or {}).get("d") is None:
            params["d"] = [law.d] if isinstance(params["d"], list) else law.d  # a StepLaw brings its own d
        check_work({o.name: o.spec for o in self.options}, params, self.defaults(), {o.name: o.flag for o in self.options})
        hooks = [lambda p, fn=fn: fn(self, p) for fn in _VALIDATORS.values()]  # the shared limits first
        hooks += [self.validate] if self.validate is not None else []
        for hook in hooks:
            try:
                hook(dict(params))
            except InvalidInput:
                raise
            except ValueError as e:  # a limit's refusal (a bug in a hook is any other exception: not bad input)
                raise InvalidInput(str(e).splitlines()[0] if str(e) else type(e).__name__) from None
        return params


_VALIDATORS: dict[str, Callable[[Check, dict], None]] = {}


def add_validator(fn: Callable[[Check, dict], None]) -> Callable[[Check, dict], None]:
    """Add a limit that :meth:`Check.parse_params` applies to every check: ``fn(check, params)`` returns
    quietly or raises :class:`~stylized.InvalidInput` naming the option (the experiments add the step-family
    construction this way: ``simulations._common.validate_families``).  Added once per function name."""
    _VALIDATORS[f"{fn.__module__}.{fn.__qualname__}"] = fn
    return fn


def headline(quantity: str, row: dict, verdict: str, **override) -> dict:
    """A check's ``headline`` from one estimate row: its ``estimate``, ``ci_low``, ``ci_high``,
    ``n_samples`` and ``theory`` (``override`` replaces any of them), plus ``quantity`` and ``verdict``."""
    keys = ("estimate", "ci_low", "ci_high", "n_samples", "theory")
    return {"quantity": quantity, **{k: row.get(k) for k in keys}, **override, "verdict": verdict}


_REGISTRY: dict[str, Check] = {}


def register(check: Check) -> Check:
    """Add ``check`` to the registry (its name must be unique)."""
    if check.name in _REGISTRY and _REGISTRY[check.name].module != check.module:
        raise ValueError(f"check {check.name!r} is registered twice")
    _REGISTRY[check.name] = check
    return check


CHECKS_GROUP = "stylized.checks"
COMMANDS_GROUP = "stylized.commands"
_ROOT = Path(__file__).resolve().parents[2]


def plugins(group: str) -> dict[str, str]:
    """``name → "module:attr"`` for the entry points of ``group``.

    Installed entry points come first; a source checkout (``pyproject.toml`` beside the
    package, run without reinstalling) adds the ones its ``pyproject.toml`` declares.
    """
    found = {ep.name: ep.value for ep in entry_points(group=group)}
    for name, value in _declared_in_checkout(group).items():
        found.setdefault(name, value)
    return found


def _declared_in_checkout(group: str) -> dict[str, str]:
    """The ``[project.entry-points."<group>"]`` table of the checkout's ``pyproject.toml`` (entries whose
    package sits in the checkout), read line by line (``name = "module:attr"``)."""
    try:
        text = (_ROOT / "pyproject.toml").read_text()
    except OSError:
        return {}
    out, inside = {}, False
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("["):
            inside = line.replace("'", '"') == f'[project.entry-points."{group}"]'
        elif inside and (m := re.fullmatch(r'([\w.-]+)\s*=\s*"([^"]+)"', line)):
            if (_ROOT / m[2].split(":")[0].split(".")[0]).exists():
                out[m[1]] = m[2]
    return out


def load_plugin(value: str):
    """The object named by ``"module:attr"`` (or the module, without ``:attr``).

    A package that sits in the source checkout but is not installed (``benchmarks/``) is imported from the
    checkout: its root joins ``sys.path`` only then."""
    module, _, attr = value.partition(":")
    top = module.split(".")[0]
    try:
        obj = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != top or not (_ROOT / top / "__init__.py").exists():
            raise
        sys.path.append(str(_ROOT))
        obj = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def _register_plugin(obj) -> None:
    """Register what a ``stylized.checks`` entry point names: a :class:`Check`, a module name (imported:
    its checks register themselves), a module, a callable returning any of these, or an iterable of them."""
    if isinstance(obj, Check):
        register(obj)
    elif isinstance(obj, str):
        importlib.import_module(obj)
    elif callable(obj) and not isinstance(obj, type):
        _register_plugin(obj())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for x in obj:
            _register_plugin(x)


def _available(check: Check) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in check.requires)


def load_checks(external: bool = False) -> dict[str, Check]:
    """Every registered check whose optional packages are installed, by claim order.

    ``external`` also returns the checks that only read another command's result (C6, the bridge).
    """
    for name, value in plugins(CHECKS_GROUP).items():
        try:
            _register_plugin(load_plugin(value))
        except ImportError as e:
            print(f"stylized: checks plugin {name!r} ({value}) not loaded: {e}", file=sys.stderr)
    checks = {k: c for k, c in _REGISTRY.items() if (external or not c.external) and _available(c)}
    return dict(sorted(checks.items(), key=lambda kv: (kv[1].claim, kv[1].extra.get("order", 0), kv[0])))


def get_check(name: str) -> Check:
    """The check called ``name`` (external ones included); ``ValueError`` naming the choices otherwise."""
    checks = load_checks(external=True)
    if name not in checks:
        raise ValueError(f"claim must be one of {', '.join(checks)}; got {name!r}")
    return checks[name]
