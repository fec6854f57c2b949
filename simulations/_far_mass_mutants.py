"""Mutation helpers of the far-mass checks (C3 transfer, C4): wrong models and wrong theories as patches.

Each helper returns a context manager (:func:`unittest.mock.patch`) over a name that a check module looks
up at run time; :class:`stylized.harness.registry.Mutant` calls it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from contextlib import ExitStack, contextmanager
from unittest import mock

from stylized.laws.families import LazyHaar, StepLaw
from stylized.theory.weight_laws import FarLaw

__all__ = ["scaled_far_law", "scaled_prediction", "wrap_model", "frozen_family", "estimated_mean_off", "ESTIMATED_PARAMS"]

ESTIMATED_PARAMS = {
    "transfer": {"family": "cayley", "d": 5, "L": [128, 1024], "trials": 800, "target_n": 1, "lam": 6.0, "D": 8},
    "far-mass-growth": {"family": "cayley", "d": 5, "lam": 8.0, "D": 8, "L": [16, 32, 64, 128], "L_sim": 128,
                        "trials": 2000, "horizon_lam": [4.0], "horizon_trials": 100, "control": ["none"]},
}
"""Sizes of the estimated-theory mutants (per check): ``cayley``, a law without a closed-form operator, at odd
``d`` and where a 3% error in ``E[M]`` is within reach of the measurement."""


def scaled_far_law(target: str, scale: float):
    """The far law with every far weight ``e^{λξ}`` multiplied by ``scale`` (its MGF off by that factor)."""
    return mock.patch(target, functools.partial(FarLaw, scale=scale))


def scaled_prediction(module: str, key: str, factor: float):
    """``module.predict_transfer`` (looked up at run time) with its prediction ``key`` (``rho``: ``E[ρ_D(L)]``,
    ``alpha_target``: ``E[α_T(L)]``, ``alpha_renorm``: ``E[α̃_T]``) times ``factor``, the others kept."""
    from stylized.theory import growth
    def predict(*a, **k):
        p = growth.predict_transfer(*a, **k)
        return {**p, key: p[key] * factor}

    return mock.patch(f"{module}.predict_transfer", predict)


def frozen_family(family):
    """A step law that never moves a vector (``P_{j→i} = I``): lazy Haar with ``p = 10⁻¹²``."""
    return LazyHaar(d=family.d, p=1e-12)


@contextmanager
def wrap_model(module: str, names: tuple[str, ...], family: str | None = None, **changes):
    """Patch ``module.name`` (functions taking a :class:`~stylized.engine.farmass.GrowthModel` first) so that the
    simulation runs a changed model: ``changes`` replace fields, ``family="frozen"`` removes transport."""
    mod = importlib.import_module(module)
    with ExitStack() as stack:
        for name in names:
            orig = getattr(mod, name)

            def wrapped(model, *a, _orig=orig, **k):
                new = dataclasses.replace(model, **changes)
                if family == "frozen":
                    new = dataclasses.replace(new, family=frozen_family(model.family))
                return _orig(new, *a, **k)

            stack.enter_context(mock.patch(f"{module}.{name}", wrapped))
        yield


@contextmanager
def estimated_mean_off(factor: float = 0.97):
    """Theory mutant of the estimated path: the one-step overlap law behind an estimated transition operator has
    its mean ``E M₁₁ = 1 − γ`` (the estimated ``E[M]``) off by ``factor`` (``(M₁₁, M₂₁) → (factor·M₁₁, M₂₁)``).

    The estimated operators are cached per law: the caches are cleared on entry and exit."""
    from stylized.theory import weight_laws
    orig = StepLaw.overlap_step_draws

    def off(self, size, xrng):
        a, b = orig(self, size, xrng)
        return factor * a, b

    def clear():
        weight_laws._transition_cached.cache_clear()
        weight_laws._estimates_cached.cache_clear()

    clear()
    try:
        with mock.patch.object(StepLaw, "overlap_step_draws", off):
            yield
    finally:
        clear()
