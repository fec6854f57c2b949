"""``check_law(law)``: the step-law contract, runnable on any law (a user's included): a declaration is tested.

In the spirit of scikit-learn's ``check_estimator``: the library's whole contract for a
:class:`~stylized.laws.base.StepLaw`, as a public tool.  Each item is one function ``check_law_<item>(law, *, seed,
samples) → LawCheck`` (:data:`LAW_CHECKS`); :func:`law_checks` yields them as ``(law, check)`` pairs, one pytest case
each (:func:`stylized.pytest_plugin.parametrize_with_law_checks`, as scikit-learn's ``parametrize_with_checks``):

* ``shape`` — ``d`` is an integer ≥ 2; :meth:`sample` returns ``shape + <step axes>`` (``d × d`` for dense draws);
  :meth:`dense` returns ``(n, d, d)``;
* ``dtype`` — draws are real numbers (never complex: an imaginary part is never dropped) and finite;
* ``reproducible`` — the same seed gives the same draws, another seed different ones;
* ``invalid-input`` — ``rvs`` refuses a negative or fractional size with a ``ValueError``;
* ``orthogonal`` — ``MᵀM = I`` to rounding for every draw, or, for ``orthogonal = False``, a contraction
  ``||M||_op ≤ 1`` (the draw validation every check applies, :func:`stylized.laws.trust.draw_defects`);
* ``apply`` — :meth:`apply` (and its transpose) equals the dense matrix times the vector (pathwise laws);
* ``dense-oracle`` — ``route_queries``, ``route_scores`` and ``route_sum`` equal the dense route product;
* ``mean`` — a declared :meth:`mean` against an independent Monte Carlo mean (entrywise, Bonferroni over ``d²``;
  a law with dependent steps, ``iid = False``, is drawn as independent one-step chains);
* ``walk-vs-mean`` — ``E[qᵀP_n q]`` from :meth:`walk_scores` against :meth:`mean_overlap` at ``n = 1, 2, 5``;
* ``gap`` — ``γ ∈ [0, 1]`` and a window ``W(0.01) ≥ 1``;
* ``isotropic`` — a declared ``isotropic = True``: conjugation invariance (the laws of ``e₁ᵀMe₁`` and ``e₂ᵀMe₁``
  against those of ``uᵀMu`` and ``vᵀMu`` for a fixed orthonormal ``u, v``: two-sample KS) and, for an orthogonal
  law, the post-mixing score law (``(1+s)/2`` of ``s = e₁ᵀP_n e₁`` at ``n = ⌈4·W(0.01)⌉`` against the
  Haar-coordinate law ``Beta((d−1)/2, (d−1)/2)``: one-sample KS);
* ``planes`` — declared SO(2) planes: every draw is block-diagonal with ``2 × 2`` rotation blocks, and draws commute;
* ``premises`` — a report, never failed: the premises of C2/C3 measured (:func:`stylized.theory.premises.measure_premises`);
* ``gap-oracle``, ``mean-power``, ``window``, ``random-state``, ``one-step``, ``backends``, ``dimensions`` — the law's
  theory and transport against dense oracles, and the law rebuilt at other ``d``
  (:mod:`stylized.harness.contract_oracles`).

Each statistical item (``mean``, ``walk-vs-mean``, ``isotropic``) has family level
:data:`~stylized.harness.contract_item.CONTRACT_LEVEL` = ``1e-3``
(Bonferroni over its sub-tests), so a correct law fails an item about once in a thousand seeds.

>>> from stylized.laws.families import make_family
>>> all(c.passed for c in check_law(make_family("householder", 5)))
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial

import numpy as np
from scipy import stats

from ..core.step_ops import uniform_sphere
from ..engine.transport_reference import reference_scores, reference_sum, route_products
from ..laws.base import StepLaw
from ..laws.trust import draw_defects
from .contract_item import CONTRACT_LEVEL, SAMPLES, LawCheck, contract_item, z_level
from .contract_oracles import (
    check_law_backends,
    check_law_dimensions,
    check_law_gap_oracle,
    check_law_mean_power,
    check_law_one_step,
    check_law_random_state,
    check_law_window,
)

__all__ = ["check_law", "law_checks", "LAW_CHECKS", "check_law_shape", "check_law_dtype", "check_law_reproducible",
           "check_law_invalid_input", "check_law_orthogonal", "check_law_apply", "check_law_dense_oracle",
           "check_law_mean", "check_law_walk_vs_mean", "check_law_gap", "check_law_isotropic", "check_law_planes",
           "check_law_premises"]

_BUDGET = 2e8  # entries a statistical item may draw (size · steps · d^step_ndim)


def _dense(law: StepLaw, n: int, rng) -> np.ndarray:
    return np.asarray(law.dense(law.rvs(n, rng), rng))


@contract_item("shape")
def check_law_shape(law, seed, samples):
    """``d`` an integer ≥ 2; ``sample`` gives ``shape + <step axes>`` (``d × d`` dense); ``dense`` gives ``(n, d, d)``."""
    d, nd = law.d, law.step_ndim
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
        return False, f"d = {d!r} is not an integer ≥ 2"
    x = np.asarray(law.sample(np.random.default_rng(seed), (3, 2), np))
    step_shape = tuple(x.shape[2:])
    dense = np.asarray(law.dense(law.rvs(4, seed), seed))
    ok = (x.shape[:2] == (3, 2) and len(step_shape) == nd and (nd != 2 or step_shape == (d, d))
          and dense.shape == (4, d, d))
    return ok, f"d = {d}: sample (3, 2) → {x.shape}, dense(rvs(4)) → {dense.shape}"


@contract_item("dtype")
def check_law_dtype(law, seed, samples):
    """Draws (structured and dense) are real numbers, and dense draws are finite."""
    x = np.asarray(law.sample(np.random.default_rng(seed), (8,), np))
    dense = np.asarray(law.dense(x, np.random.default_rng(seed)))
    kinds = (x.dtype.kind, dense.dtype.kind)
    real = all(k in "biuf" for k in kinds)
    finite = real and bool(np.all(np.isfinite(dense)))
    return real and finite, f"draws {x.dtype}, dense {dense.dtype}" + ("" if real else " (not real)") + (
        "" if finite or not real else " (not finite)")


@contract_item("reproducible")
def check_law_reproducible(law, seed, samples):
    """The same seed gives the same dense draws, the next seed different ones."""
    def draw(s):  # dense matrices: structured draws may be degenerate (Haar's flags are all set)
        return law.dense(law.rvs(5, s), s)

    a, b, c = draw(seed), draw(seed), draw(seed + 1)
    random = not all(np.array_equal(a[0], x) for x in a[1:])  # a deterministic law draws one matrix: any seed
    ok = np.array_equal(a, b) and (not random or not np.array_equal(a, c))
    return ok, "same seed equal, next seed different (dense)" if random else "same seed equal (one matrix: deterministic)"


@contract_item("invalid-input")
def check_law_invalid_input(law, seed, samples):
    """``rvs`` refuses a negative and a fractional size."""
    refused = []
    for bad in (-1, 1.5):
        try:
            law.rvs(bad, seed)
        except (ValueError, TypeError):
            refused.append(bad)
    return len(refused) == 2, f"rvs refused sizes {refused} of [-1, 1.5]"


@contract_item("orthogonal")
def check_law_orthogonal(law, seed, samples):
    """``MᵀM = I`` to rounding (``orthogonal = True``) or ``||M||_op ≤ 1`` (a declared contraction), 64 draws."""
    rng = np.random.default_rng(seed + 3)
    why = draw_defects(law, np.asarray(_dense(law, 64, rng), dtype=float), rng)
    kind = "orthogonal" if law.orthogonal else "declared contraction"
    return why is None, f"{kind}, 64 draws: " + (why or "holds to rounding")


@contract_item("apply")
def check_law_apply(law, seed, samples):
    """``apply(step, x)`` and its transpose against the dense matrix (pathwise laws)."""
    if not law.pathwise:
        return True, "applied in law (pathwise = False): compared in distribution by walk-vs-mean"
    rng = np.random.default_rng(seed + 5)
    steps = law.rvs(16, rng)
    m = law.dense(steps, rng)
    x = rng.standard_normal((16, law.d))
    e1 = np.max(np.abs(law.apply(steps, x) - np.einsum("nab,nb->na", m, x)))
    e2 = np.max(np.abs(law.apply(steps, x, transpose=True) - np.einsum("nba,nb->na", m, x)))
    return max(e1, e2) < 1e-10, f"max error {max(e1, e2):.2e} (M x and Mᵀ x, 16 draws)"


@contract_item("dense-oracle")
def check_law_dense_oracle(law, seed, samples):
    """Route transport (queries, scores, sums) against the dense route product (pathwise laws)."""
    if not law.pathwise:
        return True, "applied in law (pathwise = False): compared in distribution by walk-vs-mean"
    d, rng, T, N = law.d, np.random.default_rng(seed + 7), 3, 7
    steps = law.sample(rng, (T, N), np)
    mats = law.dense(steps.reshape((T * N,) + steps.shape[2:]), rng).reshape(T, N, d, d)
    q = uniform_sphere(rng, (), d)
    keys, values, a = uniform_sphere(rng, (T, N), d), rng.standard_normal((T, N, d)), rng.random((T, N))
    P = route_products(mats)
    errs = [np.max(np.abs(law.route_scores(steps, q, keys) - reference_scores(mats, q, keys))),
            np.max(np.abs(law.route_sum(steps, a, values) - reference_sum(mats, a, values))),
            np.max(np.abs(law.route_queries(steps, q) - np.einsum("tnde,d->tne", P, q)))]
    return max(errs) < 1e-9, f"max error {max(errs):.2e} (scores, sums, queries; T={T}, N={N})"


@contract_item("mean")
def check_law_mean(law, seed, samples):
    """A declared ``mean()`` against ``samples`` independent dense draws, entrywise z at level 1e-3 / d²."""
    d = law.d
    if not law.has_exact_mean:
        est = law.estimated_mean
        return est.radius < 1.0, f"estimated (Monte Carlo, n = {est.n}): ||Ê − E[M]||_op ≤ {est.radius:.3g} (95%)"
    n, rng, src = samples, np.random.default_rng(seed), np.random.default_rng(seed + 17)
    # independent draws: a law with dependent steps (iid = False, a Markov chain) gives n chains of one step each
    draws = law.rvs(n, src) if law.iid else law.sample(src, (n, 1), np)[:, 0]
    m = law.dense(draws, rng).reshape(n, d * d)
    mu, se = m.mean(0), m.std(0, ddof=1) / math.sqrt(n)
    exact = np.asarray(law.mean(), dtype=float).reshape(d * d)
    worst = float(np.max(np.abs(mu - exact) - z_level(CONTRACT_LEVEL, d * d) * se - 1e-12))
    return worst <= 0, f"declared E[M] vs Monte Carlo (n = {n}): max excess over z·se = {worst:.3g} (level 1e-3)"


@contract_item("walk-vs-mean")
def check_law_walk_vs_mean(law, seed, samples):
    """``E[qᵀP_n q]`` on 4000 chains at ``n = 1, 2, 5`` against ``qᵀE[M]ⁿq`` (z at level 1e-3 plus its radius)."""
    d = law.d
    q = np.full(d, 1.0 / math.sqrt(d))
    ns = np.array([1, 2, 5])
    x = law.walk_scores(ns, 4000, np.random.default_rng(seed + 29), np, q=q)
    mu, se = x.mean(0), x.std(0, ddof=1) / math.sqrt(x.shape[0])
    theory = np.atleast_1d(law.mean_overlap(q, ns))
    rad = np.atleast_1d(law.mean_overlap_radius(q, ns))
    excess = np.abs(mu - theory) - z_level(CONTRACT_LEVEL, ns.size) * se - rad - 1e-12
    return bool(np.all(excess <= 0)), (f"E[qᵀP_n q] at n = 1, 2, 5 (4000 chains) vs qᵀE[M]ⁿq "
                                       f"({law.theory_kind}): max excess {float(np.max(excess)):.3g}")


@contract_item("gap")
def check_law_gap(law, seed, samples):
    """``γ ∈ [0, 1]`` and ``W(0.01) ≥ 1``."""
    g, w = law.spectral_gap, law.mixing_window(0.01)
    return 0.0 <= g <= 1.0 and w >= 1, f"γ = {g:.4g}, W(0.01) = {w:g}"


def _images(law, x: np.ndarray, n: int, rng) -> np.ndarray:
    """``M x`` for ``n`` fresh draws (``x`` one vector), in chunks: ``(n, d)``."""
    d, out = law.d, []
    chunk = max(1, min(n, int(2**22 // d ** max(law.step_ndim, 1))))
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        steps = law.sample(rng, (k,), np)
        out.append(np.asarray(law.apply(steps, np.broadcast_to(x, (k, d)).copy(), xrng=rng), dtype=float))
    return np.concatenate(out)


@contract_item("isotropic")
def check_law_isotropic(law, seed, samples):
    """A declared ``isotropic = True`` tested: conjugation invariance and the post-mixing Haar-coordinate law."""
    if not law.isotropic:
        return True, "not declared (isotropic = False): nothing to test"
    d, rng = law.d, np.random.default_rng(seed + 41)
    n = max(500, samples // 5)
    tests = 3 if law.orthogonal else 2
    alpha = CONTRACT_LEVEL / tests
    e1, e2 = np.eye(d)[0], np.eye(d)[1]
    basis, _ = np.linalg.qr(np.random.default_rng(seed + 43).standard_normal((d, 2)))
    u, v = basis[:, 0], basis[:, 1]
    a = _images(law, e1, n, rng)
    b = _images(law, u, n, rng)
    r9 = lambda x: np.round(x, 9)  # noqa: E731  (an atom, M = I, sits at uᵀu = 1 − rounding: one grid for both)
    p_diag = stats.ks_2samp(r9(a @ e1), r9(b @ u)).pvalue
    p_off = stats.ks_2samp(r9(a @ e2), r9(b @ v)).pvalue
    detail = (f"conjugation (n = {n} per side, two-sample KS): p = {p_diag:.2g} (e₁ᵀMe₁ vs uᵀMu), "
              f"{p_off:.2g} (e₂ᵀMe₁ vs vᵀMu)")
    ok = p_diag > alpha and p_off > alpha
    if law.orthogonal:
        W = law.mixing_window(0.01)
        steps = math.ceil(4 * W) if math.isfinite(W) else None
        size = min(2000, int(_BUDGET // max(1, (steps or 0) * d ** law.step_ndim)))  # chains within the budget
        if steps is None:
            detail += "; post-mixing law not tested (γ = 0: the walk never mixes, so the claim is vacuous)"
        elif size < 500:
            detail += f"; post-mixing law not tested (⌈4·W(0.01)⌉ = {steps} steps exceed the draw budget)"
        else:
            s = law.walk_scores([steps], size, np.random.default_rng(seed + 47), np, q=e1, k=e1)[:, 0]
            ref = stats.beta((d - 1) / 2, (d - 1) / 2)
            p_haar = stats.kstest((1 + np.clip(s, -1, 1)) / 2, ref.cdf).pvalue
            ok = ok and p_haar > alpha
            detail += (f"; post-mixing e₁ᵀP_n e₁ at n = ⌈4·W(0.01)⌉ = {steps} ({size} chains) vs "
                       f"Beta((d−1)/2, (d−1)/2): KS p = {p_haar:.2g}")
    return ok, detail + f" (each at {alpha:.2g}; family level {CONTRACT_LEVEL:g})"


@contract_item("planes")
def check_law_planes(law, seed, samples):
    """Declared SO(2) planes: block-diagonal ``2 × 2`` rotations (``d`` even), commuting draws."""
    if not law.planes:
        return True, "not declared (planes = False): nothing to test"
    d = law.d
    if d % 2:
        return False, f"declares SO(2) planes in odd d = {d}"
    m = np.asarray(_dense(law, 32, np.random.default_rng(seed + 53)), dtype=float)
    blocks = np.kron(np.eye(d // 2), np.ones((2, 2))).astype(bool)
    off = float(np.max(np.abs(m[:, ~blocks]), initial=0.0))
    c, s = m[:, 0::2, 0::2], m[:, 1::2, 0::2]
    rot = float(max(np.max(np.abs(np.diagonal(c, axis1=1, axis2=2) - np.diagonal(m[:, 1::2, 1::2], axis1=1, axis2=2))),
                    np.max(np.abs(np.diagonal(s, axis1=1, axis2=2) + np.diagonal(m[:, 0::2, 1::2], axis1=1, axis2=2)))))
    comm = float(np.max(np.abs(m[:-1] @ m[1:] - m[1:] @ m[:-1])))
    ok = max(off, rot, comm) < 1e-9
    return ok, f"32 draws: max off-block {off:.2g}, non-rotation block {rot:.2g}, max |M_iM_j − M_jM_i| {comm:.2g}"


@contract_item("premises")
def check_law_premises(law, seed, samples):
    """A report (never failed): the premises of C2/C3 for this law, measured."""
    try:
        from ..theory.premises import measure_premises
    except ImportError:
        return True, "premises not measured (stylized.theory.premises absent)"
    if not law.orthogonal:
        return True, "not measured: C2's premises concern orthogonal laws (a contraction has no Haar limit)"
    try:
        p = measure_premises(law, seed=seed, degrees=(2,), samples=2000)
    except ValueError as e:  # a law the premises do not apply to (their refusal), reported, not failed
        return True, f"not measured: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}"
    gaps = "; ".join(f"{g.name.split(' (')[0]}: {g.value:.3g} ({g.status})" if g.value is not None
                     else f"{g.name.split(' (')[0]}: not measured" for g in p.gaps)
    return True, f"claim {p.claim}: {gaps}" + (f" — {p.note()}" if p.failures else "")


LAW_CHECKS: dict[str, Callable[..., LawCheck]] = {f.item_name: f for f in (
    check_law_shape, check_law_dtype, check_law_reproducible, check_law_invalid_input, check_law_orthogonal,
    check_law_apply, check_law_dense_oracle, check_law_mean, check_law_walk_vs_mean, check_law_gap,
    check_law_isotropic, check_law_planes, check_law_premises, check_law_gap_oracle, check_law_mean_power,
    check_law_window, check_law_random_state, check_law_one_step, check_law_backends, check_law_dimensions)}
"""Every item of the contract by name, in the order :func:`check_law` runs them."""


def _run_item(name: str, law: StepLaw, *, seed: int = 0, samples: int = SAMPLES) -> LawCheck:
    return check_law(law, seed=seed, samples=samples, items=(name,))[0]


def law_checks(law: StepLaw) -> Iterator[tuple[StepLaw, Callable[..., LawCheck]]]:
    """``(law, check)`` for every item of the contract, as scikit-learn's ``check_estimator(generate_only=True)``.

    ``check(law)`` runs one item (``check.item_name``, its function's name ``check_law_<item>``) and raises
    ``AssertionError`` naming what it measured when the item fails; it returns the item's :class:`LawCheck`.
    :func:`stylized.pytest_plugin.parametrize_with_law_checks` makes one pytest case of each.

    >>> from stylized.laws.families import make_family
    >>> [check.item_name for _, check in law_checks(make_family("householder", 5))][:3]
    ['shape', 'dtype', 'reproducible']
    """
    for name, fn in LAW_CHECKS.items():
        check = partial(_run_item, name)
        check.item_name = name
        check.__name__ = fn.__name__
        yield law, check


def check_law(law: StepLaw, *, seed: int = 0, samples: int = SAMPLES, raise_on_fail: bool = True,
              items: tuple[str, ...] | None = None) -> list[LawCheck]:
    """Run the step-law contract on ``law``, as scikit-learn's ``check_estimator`` runs an estimator's.

    Every item of :data:`LAW_CHECKS` runs (shapes, dtype, reproducibility, invalid sizes, orthogonality or a
    declared contraction, ``apply`` and every transport against the dense route product ``P_{j→i} = M_i ⋯ M_{j+1}``,
    a declared ``mean()`` against Monte Carlo, the score walk ``E[qᵀP_n q]`` against ``qᵀE[M]ⁿq``, ``γ`` and the
    window, a declared ``isotropic`` or ``planes``, a report of the premises of C2/C3, then ``γ``, ``E[M]ⁿ`` and
    ``W(ε)`` against dense matrices, seeds, the law of one step, every transport backend, and the law rebuilt at
    other ``d``: :mod:`stylized.harness.contract_oracles`).  A declaration is a
    claim the contract tests, never a fact it trusts.  Each statistical item has family level
    :data:`~stylized.harness.contract_item.CONTRACT_LEVEL` (``1e-3``), so a correct law fails an item about once in a
    thousand seeds.

    Parameters
    ----------
    law : StepLaw
        The law under test, built-in or a user's (any :class:`~stylized.laws.base.StepLaw` subclass).
    seed : int, default 0
        Seed of every draw the contract makes; the same seed gives the same items.
    samples : int, default :data:`~stylized.harness.contract_item.SAMPLES` (20,000)
        Draws behind the ``mean`` item (the ``isotropic`` item takes a fifth of them per side).
    raise_on_fail : bool, default True
        Raise ``AssertionError`` naming every failed item (with what it measured) instead of returning them.
    items : tuple of str, optional
        Only these items, by name (keys of :data:`LAW_CHECKS`); default every item, in order.

    Returns
    -------
    list of LawCheck
        One :class:`LawCheck` per item run: its ``name``, whether it ``passed``, and the ``detail`` it measured.

    Raises
    ------
    TypeError
        ``law`` is not a :class:`~stylized.laws.base.StepLaw`.
    ValueError
        ``items`` names an item that does not exist.
    AssertionError
        An item failed and ``raise_on_fail`` is true.

    Examples
    --------
    >>> from stylized.laws.families import make_family
    >>> checks = check_law(make_family("householder", 5), items=("shape", "orthogonal", "dense-oracle"))
    >>> [(c.name, c.passed) for c in checks]
    [('shape', True), ('orthogonal', True), ('dense-oracle', True)]

    A law declaring a property it lacks fails the item that tests the declaration:

    >>> from stylized.laws.so2 import SO2Uniform
    >>> class NotIsotropic(SO2Uniform):
    ...     isotropic = True
    >>> [c.passed for c in check_law(NotIsotropic(d=4), items=("isotropic",), raise_on_fail=False)]
    [False]
    """
    if not isinstance(law, StepLaw):
        raise TypeError(f"check_law needs a StepLaw, got {type(law).__name__}")
    names = tuple(LAW_CHECKS) if items is None else tuple(items)
    unknown = [n for n in names if n not in LAW_CHECKS]
    if unknown:
        raise ValueError(f"items must be among {', '.join(LAW_CHECKS)}; got {unknown[0]!r}")
    checks = [LAW_CHECKS[n](law, seed=seed, samples=samples) for n in names]
    failed = [c for c in checks if not c.passed]
    if failed and raise_on_fail:
        raise AssertionError(f"{law.name} (d = {law.d}) breaks the step-law contract: "
                             + "; ".join(f"{c.name}: {c.detail}" for c in failed))
    return checks
