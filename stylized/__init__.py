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
``r.headline``, ``r.plot()``, ``r.to_json()``.  Bad options raise :class:`InvalidInput` (a ``ValueError``)
naming the option, before any work.

Numba caches the compiled kernels under the user's cache folder (``$XDG_CACHE_HOME/stylized/numba`` or
``~/.cache/stylized/numba``) unless ``NUMBA_CACHE_DIR`` is set (it must be set before Numba is imported).
"""

import os as _os

from ._cache import user_cache_dir as _user_cache_dir

_os.environ.setdefault("NUMBA_CACHE_DIR", _os.path.join(_user_cache_dir(), "numba"))  # before numba is imported

__version__ = "0.1.0"  # the one place the version is written (pyproject.toml reads it)

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
from .errors import InvalidInput  # noqa: E402
from .estimators import Estimate, mean_ci, proportion_ci  # noqa: E402
from .families import FAMILY_NAMES, law_names, make_family, register_law, rope_frequencies  # noqa: E402
from .laws.base import StepLaw  # noqa: E402
from .transport import route_product, transported_queries, transported_sum  # noqa: E402

__all__ = [
    "StylizedAttention", "alibi_bias", "far_mass", "scores", "softmax",
    "alibi_far_sum", "chi_power_correlation", "far_mass_lower_bound", "haar_coordinate_tail",
    "hoeffding_tail", "lambda_required", "levy_tail", "mixing_window",
    "Estimate", "mean_ci", "proportion_ci",
    "FAMILY_NAMES", "make_family", "rope_frequencies", "StepLaw", "law_names", "register_law",
    "route_product", "transported_queries", "transported_sum",
    "run", "Result", "defaults", "check_names", "InvalidInput",
]
