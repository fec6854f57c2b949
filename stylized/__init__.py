"""stylized: numerical checks of why accumulated orthogonal transforms of queries and keys extrapolate.

The stylized single-layer attention model of the paper: random orthogonal steps
``M_t`` with spectral gap ``γ = 1 − ||E[M_t]||_op``, route transport
``P_{j→i} = M_i ⋯ M_{j+1}``, scores ``s_ij = λ qᵀ P_{j→i} k_j``, full softmax, near/far
sets and the far mass ``ρ_D``; closed-form bounds; estimators with intervals.

>>> import stylized as st
>>> fam = st.make_family("so2-uniform", d=8, omega=1.0)
>>> round(fam.spectral_gap, 4)
0.1585

Run a paper check from Python (:mod:`stylized.harness.api`; the same options and defaults as
``stylized check NAME``): ``r = st.run("score-gap", d=64)`` gives ``r.holds``, ``r.rows``,
``r.headline``, ``r.plot()``, ``r.to_json()``.  Bad options raise :class:`InvalidInput` (a ``ValueError``)
naming the option, before any work.

Numba caches the compiled kernels under the user's cache folder (``$XDG_CACHE_HOME/stylized/numba`` or
``~/.cache/stylized/numba``) unless ``NUMBA_CACHE_DIR`` is set (it must be set before Numba is imported).
"""

from .core._cache import use_user_numba_cache

use_user_numba_cache()  # before Numba is imported
del use_user_numba_cache

__version__ = "0.1.0"  # the one place the version is written (pyproject.toml reads it)

# Public names, imported on first use (PEP 562) so that ``stylized --version`` and ``--help`` start without
# loading SciPy and Numba.
_LAZY = {
    "harness.api": ("Result", "check_names", "defaults", "run"),
    "engine.attention": ("StylizedAttention", "alibi_bias", "far_mass", "scores", "softmax"),
    "theory.bounds": ("alibi_far_sum", "chi_power_correlation", "far_mass_lower_bound", "haar_coordinate_tail",
               "hoeffding_tail", "lambda_required", "levy_tail", "mixing_window"),
    "core.errors": ("InvalidInput",),
    "core.estimators": ("Estimate", "mean_ci", "proportion_ci"),
    "laws.families": ("FAMILY_NAMES", "law_names", "make_family", "register_law", "rope_frequencies"),
    "laws.base": ("StepLaw",),
    "engine.transport_reference": ("route_product",),
    "engine.transport": ("transported_queries", "transported_sum"),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}

__all__ = [name for names in _LAZY.values() for name in names]


def __getattr__(name: str):
    import importlib
    import importlib.util

    module = _WHERE.get(name)
    if module is None:  # a submodule not imported yet (``stylized.harness.api``), as without the lazy names
        if not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
            return importlib.import_module(f".{name}", __name__)
        raise AttributeError(f"module 'stylized' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
