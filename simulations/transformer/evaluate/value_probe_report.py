"""The value probe's words: the ``paper_checks.md`` section and the figure (measured vs predicted far energy).

Reads ``value_probe_cpu.json`` (:mod:`.value_probe_run`) and, for each Q/K vs Q/K/V row's measured effect, the
committed cpu comparison (:mod:`~simulations.transformer.c6.magnitude`'s cells).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["PAIRS", "variant_table", "answer", "value_probe_section", "plot_value_probe"]

#: the paper's Q/K vs Q/K/V rows: (Q/K variant, Q/K/V variant)
PAIRS = (("random-qk", "random-qkv"), ("learned-qk", "learned-qkv"))


def _ci(x: dict | None, digits: int = 2) -> str:
    if not x or x.get("estimate") is None:
        return "—"
    return f"{x['estimate']:.{digits}f} [{x['ci'][0]:.{digits}f}, {x['ci'][1]:.{digits}f}]"


def _pooled(run: dict) -> dict[int, dict]:
    return {r["multiple"]: r for r in run["rows"] if r["head"] == "all"}


def variant_table(res: dict) -> list[str]:
    """Per variant (seed) and length: the heads' far energy measured and predicted (sums over heads), ratios."""
    lines = ["| variant | seed | length | rows | far energy Σ‖F‖² measured | C5 predicted | measured / predicted | "
             "coherent ρ_D²‖b̂‖² (untransported) / predicted | ‖b̂‖² / mean ‖v‖² | C5 suppression (Q/K/V ÷ Q/K plug-in) | "
             "measured / untransported plug-in | far / near energy |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for run in res["runs"]:
        for m, r in sorted(_pooled(run).items()):
            lines.append("| " + " | ".join([run["variant"], str(run["seed"]), f"{m}× ({r['L']:,})", str(r["n_rows"]),
                                            f"{r['sum_far']:.3g}", f"{r['sum_pred']:.3g}", _ci(r["far_over_pred"]),
                                            _ci(r["coherent_share_of_pred"]), _ci(r["background_share"]),
                                            _ci(r["suppression"]), _ci(r.get("far_over_untransported")),
                                            _ci(r["far_over_near"])]) + " |")
    return lines


def _side(x: dict | None) -> int:
    """−1 / +1 when the ratio's interval lies below / above 1, 0 when it contains 1 (or is missing)."""
    if not x or x.get("estimate") is None:
        return 0
    return -1 if x["ci"][1] < 1 else (1 if x["ci"][0] > 1 else 0)


def _pair_sentence(qk: str, qkv: str, pa: dict, pb: dict, effect: dict | None) -> str:
    removed = pb["suppression"]
    below = _side(pb["far_over_untransported"])
    s = (f"**{qk} vs {qkv}** at {pa['multiple']}× ({pa['L']:,} tokens): the far values share a background "
         f"(‖b̂‖²/mean‖v‖² {_ci(pa['background_share'])} in {qk}, {_ci(pb['background_share'])} in {qkv}); the C5 "
         f"plug-in of the {qkv} heads keeps a factor {_ci(removed)} of the far energy they would carry untransported, "
         f"and the measured far energy is {_ci(pb['far_over_untransported'])} × that untransported plug-in "
         f"(the {qk} heads' far energy: {_ci(pa['far_over_pred'])} × their own plug-in) "
         + ("(below it: transport does cancel the far sum)" if below < 0 else
            "(not below it: no cancellation is seen)" if below > 0 else "(not distinguishable from it)")
         + f" and {_ci(pb['far_over_pred'])} × the C5 prediction"
         + (" (transport cancels less than the plug-in predicts: the weights are not independent of the routes)"
            if _side(pb["far_over_pred"]) > 0 else "")
         + f"; the far energy is {_ci(pa['far_over_near'])} × the near signal's in {qk} and "
           f"{_ci(pb['far_over_near'])} × in {qkv}. ")
    if effect is None:
        return s + "The row has no measured effect at this length."
    row = (f"The row measures Δ = {effect['delta']:+.3f} [{effect['ci_low']:+.3f}, {effect['ci_high']:+.3f}] at "
           f"{effect['tokens']:,} tokens ({effect['verdict']}"
           + (f"; paper {effect['paper_delta']:+.2f} at the same length, {effect['magnitude']}" if effect.get(
               "paper_delta") is not None else "") + ")")
    if below < 0 and effect["verdict"] == "agrees":
        return s + row + ": C5 operates and points the row's way."
    if below < 0:
        return s + row + (": C5 operates in the Q/K/V model, yet the row is not decided the paper's way, so the "
                          "cancelled far sum is not what sets the perplexity ratio here.")
    return s + row + (": with no cancellation measured, C5 predicts no Q/K/V advantage from the values, "
                      "consistent with a tie" + (" but not with a split against the paper." if effect["verdict"] ==
                                                 "contradicts" else "."))


def _other_seeds(runs: dict, qkv: str, top: int) -> str:
    """The same two numbers for every seed probed (the sentence above is seed 0's)."""
    seeds = sorted(s for v, s in runs if v == qkv)
    if len(seeds) < 2:
        return ""
    rows = [_pooled(runs[(qkv, s)]).get(top) for s in seeds]
    return (f" Seeds {', '.join(map(str, seeds))} of {qkv}: plug-in suppression "
            f"{', '.join(_ci(r['suppression']) for r in rows)}; measured / untransported plug-in "
            f"{', '.join(_ci(r.get('far_over_untransported')) for r in rows)}.")


def answer(res: dict, cells: dict) -> str:
    """The one-paragraph answer: does C5 operate in these models, and does it explain the Q/K vs Q/K/V rows?

    Every word follows from the intervals: *operates* when the Q/K/V model's measured far energy lies below the
    untransported plug-in of its own heads (interval below 1)."""
    runs = {(r["variant"], r["seed"]): r for r in res["runs"]}
    top = max(res["params"]["multiples"])
    parts = []
    for qk, qkv in PAIRS:
        a, b = runs.get((qk, 0)), runs.get((qkv, 0))
        if a is None or b is None:
            continue
        pa, pb = _pooled(a).get(top), _pooled(b).get(top)
        effect = next((c for c in cells.get(f"{qk} > {qkv}", []) if c["tokens"] == pa["L"]), None)
        parts.append(_pair_sentence(qk, qkv, pa, pb, effect) + _other_seeds(runs, qkv, top))
    if not parts:
        return ""
    return ("Does the C5 mechanism operate in these models, and does it explain the Q/K vs Q/K/V rows? "
            + " ".join(parts))


def value_probe_section(res: dict | None, cells: dict | None = None) -> list[str]:
    """The ``paper_checks.md`` section of the value probe (empty without a result)."""
    if not res:
        return []
    p = res["params"]
    runs = res["runs"]
    digests = "; ".join(f"{r['variant']} s{r['seed']} {r['digest']}"
                        + ("" if r["digest_matches"] else f" (committed evaluation: {r['committed_digest']}: **differs**)")
                        for r in runs)
    lines = ["### C5 inside the trained models: value probe (cpu preset)", "",
             f"Command: `stylized transformer value-probe` ({res.get('seconds', 0):.0f} s; "
             "`simulations/transformer/evaluate/value_probe.py`). Per layer and head, on "
             f"{runs[0]['n_windows']} held-out windows × {runs[0]['n_queries']} query positions per length (D = "
             f"{runs[0]['D']}: far sources at i − j ≥ D), from the real forward pass: ρ_D, the far contribution "
             "F = Σ_far α_ij V_{j→i} v_j and its energy, the far values' common component b̂ (their mean) and noise, "
             "the near signal's energy, and the C5 prediction with the head's measured weights, b̂ and noise and the "
             "step law of its value stream (χ_b = sinc ω_b for random angles, the token-averaged E e^{iθ_b} of its "
             "table for learned ones, χ_b = 1 for untransported Q/K values): Σ_b ‖b̂_b‖² Σ_{j,k} α_ij α_ik Re χ_b^{|j−k|} "
             "+ Σ_far α_ij² ‖ξ_j‖². The suppression is the Q/K/V plug-in over the Q/K plug-in of the same head. Sums "
             f"over the {len(runs[0]['chi_abs'])} layers' heads; 95% percentile bootstrap over windows "
             f"({p['n_boot']} draws). Weights digests: {digests}. Figure: `figures/transformer_value_probe.png`.", ""]
    lines += variant_table(res)
    if cells is not None:
        lines += ["", answer(res, cells)]
    return lines + [""]


def plot_value_probe(res: dict, out_png: Path) -> Path:
    """Measured against predicted far energy per head (log-log), one panel per Q/K vs Q/K/V pair; colour: length."""
    from stylized.harness import plotting as sp

    runs = {(r["variant"], r["seed"]): r for r in res["runs"]}
    mults = sorted(res["params"]["multiples"])
    with sp.theme():
        fig, axes = sp.figure(1, len(PAIRS), height=3.2)
        for ax, pair in zip(np.ravel(axes), PAIRS):
            lo, hi = np.inf, 0.0
            for v, marker in zip(pair, ("o", "^")):
                run = runs.get((v, 0))
                if run is None:
                    continue
                for k, m in enumerate(mults):
                    rows = [r for r in run["rows"] if r["head"] != "all" and r["multiple"] == m]
                    x = np.array([r["pred"] for r in rows])
                    y = np.array([r["far"] for r in rows])
                    ok = (x > 0) & (y > 0)
                    if ok.any():
                        lo, hi = min(lo, x[ok].min(), y[ok].min()), max(hi, x[ok].max(), y[ok].max())
                    ax.scatter(x[ok], y[ok], s=9, marker=marker, alpha=0.75, color=f"C{k}", label=f"{v}, {m}×")
            if hi > 0:
                ax.plot([lo, hi], [lo, hi], color="0.4", lw=0.8, ls="--")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("C5 predicted far energy (plug-in)")
            ax.set_title(f"{pair[0]} (○) vs {pair[1]} (△)", fontsize=8)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=5, ncol=2, loc="upper left")
        np.ravel(axes)[0].set_ylabel("measured far energy ‖F‖² (mean over rows)")
        sp.caption(fig, "Per head (cpu preset, seed 0): the far contribution's energy measured in the real forward pass "
                        "against the C5 plug-in from the head's own weights, far values' background b̂ and noise and its "
                        "value stream's χ_b (χ_b = 1 for Q/K). Colour: length (multiple of L_train); dashed: equality.")
        return sp.save(fig, out_png)
