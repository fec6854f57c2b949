"""stylized: numerical checks of why accumulated orthogonal transforms of queries and keys extrapolate.

The stylized single-layer attention model of the paper: random orthogonal steps
``M_t`` with spectral gap ``γ = 1 − ||E[M_t]||_op``, route transport
``P_{j→i} = M_i ⋯ M_{j+1}``, scores ``s_ij = λ qᵀ P_{j→i} k_j``, full softmax, near/far
sets and the far mass ``ρ_D``; closed-form bounds; estimators with intervals.

>>> import stylized as st
>>> fam = st.make_family("so2-uniform", d=8, omega=1.0)
>>> round(fam.spectral_gap, 4)
0.1585

Run a paper check from Python (:mod:`stylized.api`; the same options and defaults as
``stylized check NAME``): ``r = st.run("score-gap", d=64)`` gives ``r.holds``, ``r.rows``,
``r.headline``, ``r.plot()``, ``r.to_json()``.
"""

__version__ = "0.1.0"

from .api import Result, check_names, defaults, run  # noqa: E402
from .attention import StylizedAttention, alibi_bias, far_mass, scores, softmax  # noqa: E402
from .bounds import (  # noqa: E402
    alibi_far_sum,
    chi_power_correlation,
    far_mass_lower_bound,
    haar_coordinate_tail,
    hoeffding_tail,
    lambda_required,
    levy_tail,
    mixing_window,
)
from .estimators import Estimate, mean_ci, proportion_ci  # noqa: E402
from .families import FAMILY_NAMES, make_family, rope_frequencies  # noqa: E402
from .transport import route_product, transported_queries, transported_sum  # noqa: E402

__all__ = [
    "StylizedAttention", "alibi_bias", "far_mass", "scores", "softmax",
    "alibi_far_sum", "chi_power_correlation", "far_mass_lower_bound", "haar_coordinate_tail",
    "hoeffding_tail", "lambda_required", "levy_tail", "mixing_window",
    "Estimate", "mean_ci", "proportion_ci",
    "FAMILY_NAMES", "make_family", "rope_frequencies",
    "route_product", "transported_queries", "transported_sum",
    "run", "Result", "defaults", "check_names",
]
