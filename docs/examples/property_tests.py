"""Five property tests of the paper's bounds, a few lines each, with ``stylized.strategies`` and the pytest plugin.

Run the tests: ``pytest docs/examples/property_tests.py``.  Run the script: ``python docs/examples/property_tests.py
OUT_DIR`` runs the same tests under pytest, then draws C4's far-mass bound against 300 Hypothesis-drawn contexts
into ``OUT_DIR/property_tests_far_mass.png``.
"""

import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stylized import strategies as sst
from stylized.core.estimators import mean_ci
from stylized.engine.attention import far_mass
from stylized.laws.families import make_family
from stylized.pytest_plugin import parametrize_with_law_checks
from stylized.theory.bounds import far_mass_lower_bound, haar_coordinate_tail, levy_tail

FAST = settings(max_examples=60, deadline=None, derandomize=True)  # derandomised: the same examples every run
MC_EXAMPLES, MC_LEVEL = 20, 1e-3  # the Monte Carlo test: 20 examples, joint false-rejection level 1e-3


@FAST
@given(sst.bounded_logits(), st.integers(1, 64))
def test_far_mass_lower_bound(x, D):  # C4: |s| ≤ λ  ⇒  ρ_D ≥ M_L / (M_L + K e^{2λ})
    K = min(D, x.logits.size)
    assert far_mass(x.logits, K) >= far_mass_lower_bound(K, x.logits.size - K, x.lam) * (1 - 1e-9)


@FAST
@given(sst.contexts())
def test_scores_bounded_by_lambda(ctx):  # unit q, k and orthogonal P_{j→i}:  |s_ij| = λ |qᵀ P_{j→i} k_j| ≤ λ
    assert np.all(np.abs(ctx.sample().logits) <= ctx.lam * (1 + 1e-12))


@FAST
@given(sst.dimensions(2, 512), st.floats(0.0, 1.0))
def test_levy_tail(d, t):  # C3: P(qᵀu ≥ t) ≤ exp(−d t²/2) for u uniform on S^{d−1}
    assert haar_coordinate_tail(t, d) <= levy_tail(t, d) + 1e-12


@FAST
@given(sst.laws(), st.integers(0, 64))
def test_mean_power(law, n):  # C1: ||E[P_n]||_op = ||E[M]ⁿ||_op ≤ (1 − γ)ⁿ
    assert np.linalg.norm(law.mean_power(n), 2) <= (1 - law.spectral_gap) ** n + 1e-10


@settings(max_examples=MC_EXAMPLES, deadline=None, derandomize=True)
@given(sst.laws(["so2-uniform", "so2-normal"], max_d=8), st.integers(1, 16), sst.seeds())
def test_so2_mean_cosine(law, n, seed):  # C1: E cos Φ_n = Re χ_bⁿ in every plane b (Monte Carlo, 4,000 routes)
    phi = law.rvs(4000 * n, seed).reshape(4000, n, law.n_planes).sum(axis=1)  # Φ_n: n plane angles summed
    level = 1 - MC_LEVEL / (MC_EXAMPLES * law.n_planes)  # Bonferroni over the examples and the planes
    for b, chi in enumerate(law.chi()):
        assert mean_ci(np.cos(phi[:, b]), level).contains((chi**n).real)


# The step-law contract as pytest cases: householder-d5-shape, …, so2-uniform-d4-gap (one id per item).
@parametrize_with_law_checks([make_family("householder", 5), make_family("so2-uniform", 4, omega=0.5)])
def test_contract(law, law_check):
    law_check(law)


def draw_far_mass(out: Path, n: int = 300) -> Path:
    """ρ_D of ``n`` drawn contexts against C4's bound: every point on or above the diagonal."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = []

    @settings(max_examples=n, deadline=None, derandomize=True, database=None)
    @given(sst.contexts(max_L=64, lam=st.floats(0.0, 3.0)))
    def collect(ctx):
        points.append((far_mass_lower_bound(ctx.K, ctx.M_L, ctx.lam), ctx.sample().far_mass))

    collect()
    bound, rho = np.array(points).T
    fig, ax = plt.subplots(figsize=(4.2, 3.8), layout="constrained")
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="ρ_D = bound")
    ax.scatter(bound, rho, s=8, alpha=0.6, label=f"{len(points)} drawn contexts")
    ax.set(xlabel="C4 bound  M_L / (M_L + K e^{2λ})", ylabel="measured far mass ρ_D", xlim=(0, 1), ylim=(0, 1))
    ax.legend(loc="lower right")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "property_tests_far_mass.png"
    fig.savefig(path, dpi=120)
    print(f"{len(points)} contexts, min ρ_D − bound = {np.min(rho - bound):.3g} (≥ 0); figure: {path}")
    return path


if __name__ == "__main__":
    import subprocess

    code = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider"]).returncode
    draw_far_mass(Path(sys.argv[1] if len(sys.argv) > 1 else "property_tests_out"))
    sys.exit(code)
