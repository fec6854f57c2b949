"""Every closed form of the stylized model, in one public namespace (claims C1–C5).

Each formula is written once, in the module of its concept, and imported from here:

======================  ==========================================================  =========================
module                  closed forms                                                claims
======================  ==========================================================  =========================
:mod:`.bounds`          far-mass bound and its inverse ``λ_required``, ALiBi sums,  C1, C3, C4
                        horizon, Lévy / Hoeffding tails, the Haar coordinate law,
                        the mixing window, SO(2) correlations ``Re χⁿ``
:mod:`.score_laws`      far-score laws (Haar coordinate, uniform-phase sum), MGFs,  C2, C3
                        the MGF bound on ``E max``, Gauss–Jacobi nodes
:mod:`.weight_laws`     the far weight law ``e^{λξ}``, the near chain, SO(2)         C1, C3, C4
                        overlap MGFs, ``E[F/(F+N)]`` by Laplace transforms
:mod:`.growth`          predicted ``E[ρ_D(L)]`` per control, Wald's horizon,         C3, C4
                        the forget gate's mean factor, the transfer model
:mod:`.value_theory`    finite-``M`` interference, the noncommutative (tilt) floor   C5
:mod:`.retrieval`       a passkey among far keys: its score, rank-1 rate, weight,    C3 (beyond the paper)
                        the non-mixing planes' share, under ALiBi/gate/log-scale
======================  ==========================================================  =========================

:data:`CLAIMS` maps every name to its claim and to whether the formula is *quoted* from the paper or
*derived* (in the paper or here).  Scalar closed forms broadcast over NumPy arrays like SciPy's ufuncs:
scalars in give a float, arrays in give the broadcast array, equal to the scalar loop element by
element; 0-d arrays and NumPy scalars count as the Python scalars they hold.  Bad input (complex values, NaN,
±inf, bools, strings, ``None``, non-integers where an integer is required, integers beyond ``2^53``, values
outside the documented domain, shapes that do not fit) raises ``ValueError`` naming the argument and its
allowed range, never a silent NaN (:func:`stylized.core._broadcast.check`, the one check every closed form uses).

Example
-------
>>> from stylized import theory as th
>>> rho = th.far_mass_lower_bound(K=16, M=[1e3, 1e6], lam=4.0)
>>> bool(rho[1] > rho[0])
True
>>> lam = th.lambda_required(16, 1e6, 0.1)
>>> round(float(th.far_mass_lower_bound(16, 1e6, lam)), 12)
0.1
>>> CLAIMS["far_mass_lower_bound"]
('C4', 'quoted')
"""

from __future__ import annotations

# The closed forms, imported from their modules on first use (PEP 562): importing one module of this
# package (``stylized.theory.bounds``) does not load the others, so the step laws below can use the
# formulas they override without an import cycle.
_LAZY: dict[str, tuple[str, ...]] = {
    "bounds": ('alibi_far_mass_bound', 'alibi_far_sum', 'chi_power_correlation', 'far_mass_lower_bound', 'forget_gate_mean', 'haar_coordinate_cdf', 'haar_coordinate_law', 'haar_coordinate_pdf', 'haar_coordinate_tail', 'hoeffding_tail', 'horizon_prediction', 'lambda_required', 'levy_tail', 'mixing_window',),
    "growth": ('horizon_crossing', 'mean_near_sum', 'predict_growth', 'predict_transfer', 'ratio_of_means', 'wald_horizon', 'wald_horizon_bounds',),
    "phase_cdf": ('gil_pelaez_cdf',),
    "premises": ('measure_premises', 'reflection_harmonic_eigenvalue',),
    "retrieval": ('chance', 'expected_score', 'expected_weight', 'nonmixing_floor', 'nonmixing_share', 'passkey_law', 'rank_one_probability', 'top_logit_probability',),
    "score_laws": ('HaarCoordinate', 'UniformPhaseSum', 'far_score_law', 'haar_expected_max', 'haar_log_mgf', 'haar_mgf', 'jacobi_nodes', 'max_mgf_bound', 'uniform_phase_log_mgf', 'uniform_phase_mgf',),
    "value_theory": ('coherent_sum', 'correlation_pairs', 'haar_tilt_energy', 'haar_tilt_floor', 'qk_interference_theory', 'qkv_asymptote', 'qkv_interference_theory', 'quadratic_form', 'tilt_floor', 'torus_tilt_floor',),
    "weight_laws": ('FarLaw', 'IsotropicChain', 'far_laplace_sum', 'laplace_ratio_mean', 'so2_overlap_mgf',),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}

#: name → (claim, "quoted" from the paper or "derived" in the paper or here)
CLAIMS: dict[str, tuple[str, str]] = {
    # C1: the mixing window
    "mixing_window": ("C1", "quoted"),
    "chi_power_correlation": ("C1", "quoted"),
    "IsotropicChain": ("C1", "derived"),
    "so2_overlap_mgf": ("C1", "derived"),
    # C2: decorrelation towards Haar
    "haar_coordinate_law": ("C2", "derived"),
    "haar_coordinate_cdf": ("C2", "derived"),
    "haar_coordinate_pdf": ("C2", "derived"),
    "HaarCoordinate": ("C2", "derived"),
    "UniformPhaseSum": ("C2", "quoted"),
    "far_score_law": ("C2", "derived"),
    "gil_pelaez_cdf": ("C2", "derived"),
    "jacobi_nodes": ("C2", "derived"),
    "measure_premises": ("C2", "derived"),
    "reflection_harmonic_eigenvalue": ("C2", "derived"),
    # C3: concentration and the score gap
    "levy_tail": ("C3", "quoted"),
    "haar_coordinate_tail": ("C3", "quoted"),
    "hoeffding_tail": ("C3", "quoted"),
    "haar_mgf": ("C3", "derived"),
    "haar_log_mgf": ("C3", "derived"),
    "uniform_phase_mgf": ("C3", "derived"),
    "uniform_phase_log_mgf": ("C3", "derived"),
    "max_mgf_bound": ("C3", "derived"),
    "haar_expected_max": ("C3", "derived"),
    "predict_transfer": ("C3", "derived"),
    # C4: the far-mass bound, ALiBi, horizons and the growth model
    "far_mass_lower_bound": ("C4", "quoted"),
    "lambda_required": ("C4", "derived"),
    "alibi_far_sum": ("C4", "derived"),
    "alibi_far_mass_bound": ("C4", "derived"),
    "horizon_prediction": ("C4", "derived"),
    "wald_horizon": ("C4", "derived"),
    "wald_horizon_bounds": ("C4", "derived"),
    "horizon_crossing": ("C4", "derived"),
    "forget_gate_mean": ("C4", "derived"),
    "FarLaw": ("C4", "derived"),
    "far_laplace_sum": ("C4", "derived"),
    "laplace_ratio_mean": ("C4", "derived"),
    "mean_near_sum": ("C4", "derived"),
    "predict_growth": ("C4", "derived"),
    "ratio_of_means": ("C4", "derived"),
    # C5: value-side incoherence
    "correlation_pairs": ("C5", "quoted"),
    "coherent_sum": ("C5", "derived"),
    "qkv_interference_theory": ("C5", "derived"),
    "qkv_asymptote": ("C5", "quoted"),
    "qk_interference_theory": ("C5", "quoted"),
    "quadratic_form": ("C5", "derived"),
    "haar_tilt_floor": ("C5", "derived"),
    "torus_tilt_floor": ("C5", "derived"),
    "tilt_floor": ("C5", "derived"),
    "haar_tilt_energy": ("C5", "derived"),
    # beyond the paper (issue 17): far retrieval of a passkey, scored like C3's far keys
    "expected_score": ("C3", "derived"),
    "nonmixing_share": ("C3", "derived"),
    "nonmixing_floor": ("C3", "derived"),
    "passkey_law": ("C3", "derived"),
    "rank_one_probability": ("C3", "derived"),
    "chance": ("C3", "derived"),
    "expected_weight": ("C3", "derived"),
    "top_logit_probability": ("C3", "derived"),
}

__all__ = [
    "CLAIMS", "mixing_window", "chi_power_correlation", "IsotropicChain", "so2_overlap_mgf",
    "haar_coordinate_law", "haar_coordinate_cdf", "haar_coordinate_pdf", "HaarCoordinate", "UniformPhaseSum",
    "far_score_law", "gil_pelaez_cdf", "jacobi_nodes", "measure_premises", "reflection_harmonic_eigenvalue", "levy_tail", "haar_coordinate_tail", "hoeffding_tail",
    "haar_mgf", "haar_log_mgf", "uniform_phase_mgf", "uniform_phase_log_mgf", "max_mgf_bound",
    "haar_expected_max", "predict_transfer", "far_mass_lower_bound", "lambda_required", "alibi_far_sum",
    "alibi_far_mass_bound", "horizon_prediction", "wald_horizon", "wald_horizon_bounds", "horizon_crossing", "forget_gate_mean",
    "FarLaw", "far_laplace_sum", "laplace_ratio_mean", "mean_near_sum", "predict_growth", "ratio_of_means",
    "correlation_pairs", "coherent_sum", "qkv_interference_theory", "qkv_asymptote", "qk_interference_theory",
    "quadratic_form", "haar_tilt_floor", "torus_tilt_floor", "tilt_floor", "haar_tilt_energy",
    "expected_score", "nonmixing_share", "nonmixing_floor", "passkey_law", "rank_one_probability", "chance",
    "expected_weight", "top_logit_probability",
]


def __getattr__(name: str):
    import importlib

    module = _WHERE.get(name)
    if module is None:
        if name.startswith("__"):
            raise AttributeError(name)
        try:  # a submodule (``stylized.theory.bounds``) not imported yet
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError:
            raise AttributeError(f"module 'stylized.theory' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

