"""The law registry: ``make_family(name, d, **params)`` builds any registered step law.

A law is registered under a name with :func:`register_law` (the built-ins below), declared by an
installed package in the ``stylized.laws`` entry-point group (``name = "package.module:Factory"``), or
named directly as ``"package.module:Factory"``.  A factory is a :class:`~stylized.laws.base.StepLaw`
subclass or any callable returning one; it receives ``d`` and those of the keyword parameters it
accepts (the others are ignored, as ``make_family`` always did).

Example
-------
>>> make_family("householder", 5).spectral_gap
0.4
>>> "cayley" in law_names()
True
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from importlib.metadata import entry_points

from ..core.errors import InvalidLaw
from .base import StepLaw
from .cayley import Cayley
from .contraction import Contraction
from .counterexamples import CoordReflection, LatticeAngle
from .isotropic import Haar, Householder, LazyHaar
from .markov_tokens import markov_tokens
from .so2 import RopeRandom, SO2Normal, SO2Uniform
from .trust import contained, exception_line, guarded

__all__ = ["FAMILY_NAMES", "register_law", "law_names", "make_family", "resolve_law", "is_builtin", "LAWS_GROUP"]

FAMILY_NAMES = ("so2-uniform", "so2-normal", "rope-random", "householder", "lazy-haar", "haar")
"""The six canonical families: what ``--family all`` runs and what writes the paper's results."""

LAWS_GROUP = "stylized.laws"

_LAWS: dict[str, Callable[..., StepLaw]] = {}


def register_law(name: str, factory: Callable[..., StepLaw]) -> Callable[..., StepLaw]:
    """Register ``factory`` (a law class or a callable ``(d, **params) → StepLaw``) under ``name``."""
    if not isinstance(name, str) or not name or ":" in name:
        raise ValueError(f"a law name is a non-empty string without ':', got {name!r}")
    if name in _LAWS and _LAWS[name] is not factory:
        raise ValueError(f"step law {name!r} is registered twice")
    _LAWS[name] = factory
    return factory


def _load(value: str) -> Callable[..., StepLaw]:
    module, _, attr = value.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (Exception, SystemExit, KeyboardInterrupt) as e:  # a user's module is contained (stylized.laws.trust)
        raise InvalidLaw(f"family {value!r} cannot be imported ({exception_line(e)})") from None
    if not callable(obj):
        raise InvalidLaw(f"family {value!r} is not a class or a callable returning a StepLaw")
    return obj


def _installed() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=LAWS_GROUP)}


def law_names() -> tuple[str, ...]:
    """Every law name ``make_family`` accepts: the built-ins, then the installed entry points.

    Returns
    -------
    tuple of str
        The names, built-ins first (the six canonical families of :data:`FAMILY_NAMES` among them).

    Examples
    --------
    >>> names = law_names()
    >>> set(FAMILY_NAMES) <= set(names), "cayley" in names
    (True, True)
    """
    return tuple(_LAWS) + tuple(n for n in _installed() if n not in _LAWS)


def resolve_law(name: str) -> Callable[..., StepLaw]:
    """The factory behind a registered name, an installed entry point, or ``"package.module:Factory"``."""
    if not isinstance(name, str):
        raise ValueError(f"family must be one of {', '.join(law_names())} or 'package.module:Factory'; got {name!r}")
    if name in _LAWS:
        return _LAWS[name]
    if name in (eps := _installed()):
        return _load(eps[name])
    if ":" in name:
        return _load(name)
    raise ValueError(f"family must be one of {', '.join(law_names())} or 'package.module:Factory'; got {name!r}")


def is_builtin(entry) -> bool:
    """Whether ``entry`` (a law name or a law instance) is one of this package's registered laws: those the test
    suite holds to :func:`~stylized.harness.testing.check_law`; any other law is probed before use
    (:func:`stylized.laws.trust.validate_law`)."""
    ours = [f for f in _LAWS.values() if f.__module__.startswith(__package__)]
    if isinstance(entry, str):
        return _LAWS.get(entry) in ours
    return any(type(entry) is f for f in ours)


def _accepted(factory: Callable, params: dict) -> dict:
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return params
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return params
    return {k: v for k, v in params.items() if k in sig.parameters and sig.parameters[k].kind is not inspect.Parameter.POSITIONAL_ONLY}


def make_family(name: str, d: int, *, omega: float = 1.0, sigma: float = 0.5, mu: float = 0.0, p: float = 0.1,
                base: float = 10000.0, **params) -> StepLaw:
    """Build the step law ``name`` in dimension ``d``; keyword arguments the law does not take are ignored.

    Parameters
    ----------
    name : str
        A registered law (:func:`law_names`), an installed ``stylized.laws`` entry point, or
        ``"package.module:Factory"``.
    d : int
        Dimension (even for SO(2) laws).
    omega : float, default 1.0
        Half-width of the uniform angle law (``so2-uniform``).
    sigma, mu : float, default 0.5 and 0.0
        The normal angle law (``so2-normal``); ``sigma`` defaults to 0.5, the command line's ``--sigma``.
    p : float, default 0.1
        Haar probability (``lazy-haar``), the command line's ``--p``.
    base : float, default 10000.0
        RoPE base (``rope-random``).
    **params
        Further parameters of a user's law (the command line's ``--law-param key=value``).

    Returns
    -------
    StepLaw
        The law; a user's law is wrapped so that every draw is validated while a check runs.

    Examples
    --------
    >>> fam = make_family("householder", d=16)     # M = I − 2wwᵀ: E[M] = (1 − 2/d) I
    >>> fam.spectral_gap, fam.mixing_window(0.01), fam.theory_kind
    (0.125, 35.0, 'closed form')
    """
    factory = resolve_law(name)
    kwargs = _accepted(factory, dict(omega=omega, sigma=sigma, mu=mu, p=p, base=base, **params))
    if name in _LAWS and factory.__module__.startswith(__package__):  # a built-in: its ValueError names the argument
        law = factory(d=d, **kwargs)
    else:
        with contained(f"family {name!r}"):  # a user's factory: anything it raises is one line naming it
            law = factory(d=d, **kwargs)
    if not isinstance(law, StepLaw):
        raise InvalidLaw(f"family {name!r} built a {type(law).__name__}, not a StepLaw")
    return law if is_builtin(name) else guarded(law)  # a user's law: every draw validated while a check runs


register_law("so2-uniform", SO2Uniform)
register_law("so2-normal", SO2Normal)
register_law("rope-random", RopeRandom)
register_law("householder", Householder)
register_law("lazy-haar", LazyHaar)
register_law("haar", Haar)
register_law("cayley", Cayley)
register_law("markov-tokens", markov_tokens)  # Markov token chains (markov-tokens)
register_law("contraction", Contraction)  # PaTH contraction I − β w wᵀ (contraction-norm)
register_law("coord-reflection", CoordReflection)  # C2 counterexample: γ = 2/d, degree-2 harmonic gap 0
register_law("lattice-angle", LatticeAngle)  # C2 counterexample: SO(2) angles ±π/2, E e^{2iθ} = −1
