"""The registry of paper checks: one :class:`Check` per claim experiment.

A check is declared in a module of :mod:`simulations` and registered with
:func:`register`; :func:`load_checks` imports every such module.  The CLI, the
``check --all`` runner and ``paper_checks.md`` all read this registry, so a new
check needs nothing but its own module.

A check's ``run(params, *, seed, backend, progress)`` returns a dict with at least
``holds`` (bool), ``rows`` (list of dicts, each with the swept variables under their
option names and ``estimate``, ``ci_low``, ``ci_high``, ``theory``, ``n_samples``) and
``headline`` (dict: ``quantity``, ``estimate``, ``ci_low``, ``ci_high``, ``theory``,
``verdict``), plus any extra keys.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .backend import BACKENDS

__all__ = ["Option", "Mutant", "Check", "headline", "register", "load_checks", "get_check", "int_list", "float_list", "str_list"]


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

    def defaults(self) -> dict:
        return {o.name: o.default for o in self.options}

    def parse_params(self, given: dict | None = None) -> dict:
        """Defaults overridden by ``given``; list-valued options accept strings or lists."""
        params = self.defaults()
        unknown = set(given or {}) - set(params)
        if unknown:
            raise ValueError(f"unknown option(s) for check {self.name!r}: {', '.join(sorted(unknown))}")
        opts = {o.name: o for o in self.options}
        for k, v in (given or {}).items():
            if v is None:
                continue
            try:
                params[k] = opts[k].parse(v) if isinstance(v, (str, list)) else v
            except ValueError as e:
                raise ValueError(f"{opts[k].flag}: {e}") from None
        return params


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


def load_checks() -> dict[str, Check]:
    """Import every module of :mod:`simulations` (not its sub-packages) and return the registry, by claim order."""
    import simulations

    for info in pkgutil.iter_modules(simulations.__path__):
        if not info.ispkg and not info.name.startswith("_"):
            importlib.import_module(f"simulations.{info.name}")
    return dict(sorted(_REGISTRY.items(), key=lambda kv: (kv[1].claim, kv[1].extra.get("order", 0), kv[0])))


def get_check(name: str) -> Check:
    checks = load_checks()
    if name not in checks:
        raise ValueError(f"claim must be one of {', '.join(checks)}; got {name!r}")
    return checks[name]
