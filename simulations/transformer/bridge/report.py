"""The bridge's words and tables: summary sentence, CSV rows, and the ``paper_checks.md`` section."""

from __future__ import annotations

import csv
import io
import math

import numpy as np

from .combined import fmt_ci
from .ppl import rejudged

__all__ = ["summary_text", "csv_text", "bridge_markdown"]


def _f(x, digits: int = 3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if not math.isfinite(x):
        return "never" if x > 0 else "n/a"
    return f"{x:.{digits}g}"


def _hz(x, multiples) -> str:
    """A horizon in multiples of L_train; ``None``/``inf`` (not reached) as ``> top×``."""
    if x is None or (isinstance(x, float) and math.isinf(x)):
        return f"> {max(multiples)}×"
    return f"{x:.3g}×"


def _pct(e) -> str:
    return "n/a" if e is None else f"{100 * e:+.0f}%"


def summary_text(res: dict) -> str:
    """Two to four sentences with the numbers (the bridge row of ``paper_checks.md``)."""
    v = res["verdict"]
    p = res["params"]
    worst = sorted(v["variants"].items(),
                   key=lambda kv: -max([abs(e) for e in kv[1]["errors"].values() if e is not None] or [math.inf]))
    fails = [k for k, x in v["variants"].items() if not x["ok"]]
    agree = res.get("rho_agreement", {})
    med = [np.median(a["median_abs_err"][1:]) for a in agree.values()] if agree else []
    s = (f"From L ≤ L_train = {p['L_train']} only (inputs measured on windows of ≤ {p['inputs_max_length']} tokens), "
         f"the predictor forecasts ρ_D (D = {p['D']}) per head to {max(p['multiples'])}×; against the measured ρ_D its "
         f"median absolute error over heads and lengths > L_train is {_f(float(np.median(med)) if med else None, 2)} "
         f"(seed 0 of {len(agree)} variants). ")
    s += (f"The far-mass → perplexity law, fitted leave-one-variant-out, puts the ratio at "
          f"{' and '.join(f'{m}×' for m in v['multiples'])} within ±{v['tolerance']:.0%} for {v['n_ok']}/{v['n']} "
          f"variants: the bridge {'holds' if v['holds'] else 'does not hold'}"
          + (f" (fails on {', '.join(fails)}; worst {worst[0][0]})" if fails else "") + ". ")
    g = res.get("combined", {}).get("goal", {})
    if g.get("met") is not None:
        s += (f"Goal row (far-mass control with PPL({g['multiple']}×)/PPL(L_train) ≤ {g['ratio']} and PPL(L_train) no "
              f"worse than {g['best_rotation_only']}): {'met by ' + ', '.join(g['met_by']) if g['met'] else 'not met'}.")
    return s


CSV_FIELDS = ("kind", "variant", "seeds", "multiple", "measured", "predicted", "error", "ci_low", "ci_high", "extra")


def csv_text(res: dict) -> str:
    """One row per (LOVO variant, multiple) and per combined-variant row."""
    buf = io.StringIO()
    wr = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    wr.writeheader()
    for r in res["lovo"]["rows"]:
        for m, meas, pred in zip(r["multiples"], r["measured"], r["predicted"]):
            wr.writerow({"kind": "lovo", "variant": r["variant"], "seeds": " ".join(map(str, r["seeds"])), "multiple": m,
                         "measured": meas, "predicted": pred, "error": r["err"][str(m)]})
    for r in res["combined"]["rows"]:
        wr.writerow({"kind": "combined", "variant": r["variant"], "seeds": " ".join(map(str, r["seeds"])),
                     "multiple": r["multiple"], "measured": r["ratio"], "ci_low": r["ratio_ci"][0],
                     "ci_high": r["ratio_ci"][1], "extra": f"ppl_1x={r['ppl_1x']:.4f} goal={r.get('goal')}"})
    return buf.getvalue()


def bridge_markdown(result: dict) -> str:
    """The bridge section of ``paper_checks.md``: verdict row, leave-one-variant-out table, combined table."""
    v, p = rejudged(result), result["params"]
    ms = v["multiples"]
    lines = ["## Bridge — far mass predicted from L ≤ L_train, and perplexity from far mass", "",
             f"Command: `stylized transformer bridge --preset {p['preset']}`; figure `figures/transformer_bridge.png`; "
             f"rows `bridge_{p['preset']}.csv`.", "", result.get("summary", ""), "",
             f"**Verdict: {'holds' if v['holds'] else 'does not hold'}** — rule: {v['rule']}. "
             f"Predictor inputs measured on {p['heldout_windows']} held-out windows of ≤ {p['inputs_max_length']} tokens; "
             + (f"learned tables' route characteristic m_b(n) from {p['token_process']} (`chi-markov`'s kept process); "
                if p.get("token_process") else "learned tables' χ_b from the validation stream's unigram frequencies; ")
             + (f"{len(p['reused_without_checkpoint'])} checkpoints not on disk enter through their previous predictions "
                "(same weights digest, same settings); " if p.get("reused_without_checkpoint") else "")
             +
             f"PPL law log r = β₁ Δρ̄ + β₂ Δlog(1 − ρ̄) (NNLS, no intercept), fitted without the variant it predicts; "
             f"β on all variants = {', '.join(_f(b) for b in result['lovo']['beta_all'])}.", "",
             "| left-out variant | seeds | " + " | ".join(f"measured {m}× | predicted {m}× | error" for m in ms)
             + " | PPL-1.5 horizon measured / predicted | within ±tol |",
             "|---|---|" + "---|---|---|" * len(ms) + "---|---|"]
    for r in result["lovo"]["rows"]:
        cells = []
        for m in ms:
            if m in r["multiples"]:
                k = r["multiples"].index(m)
                cells += [_f(r["measured"][k]), _f(r["predicted"][k]), _pct(r["err"][str(m)])]
            else:
                cells += ["n/a"] * 3
        lines.append(f"| {r['variant']} | {len(r['seeds'])} | " + " | ".join(cells)
                     + f" | {_hz(r['horizon_measured'], r['multiples'])} / {_hz(r['horizon_predicted'], r['multiples'])} | "
                     f"{'yes' if v['variants'][r['variant']]['ok'] else '**no**'} |")
    lines += _skill_lines(v["skill"])
    c = result["combined"]
    g = c.get("goal", {})
    lines += ["", f"### Far-mass controls (seeds pooled; {c.get('n_windows', 'n/a')} paired windows, "
                  f"metric {c.get('metric', 'target')})", "",
              f"Goal: {g.get('rule', 'n/a')} — **{'met by ' + ', '.join(g['met_by']) if g.get('met') else 'not met' if g.get('met') is False else 'undecided (no data)'}**"
              f" (best rotation-only: {g.get('best_rotation_only')}).", "",
              f"| variant | seeds | PPL({g.get('multiple', 'max')}×)/PPL(L_train) [95% CI] | per seed | PPL(L_train) [95% CI] | "
              "Δlog PPL vs best [95% CI] | goal |", "|---|---|---|---|---|---|---|"]
    for r in c.get("rows", []):
        d = r.get("dlog_ppl_ci")
        lines.append(f"| {r['variant']} | {','.join(map(str, r['seeds']))} | {fmt_ci(r['ratio'], r['ratio_ci'])} | "
                     f"{', '.join(_f(x) for x in r['ratio_per_seed'])} | {fmt_ci(r['ppl_1x'], r['ppl_1x_ci'], 4)} | "
                     + (f"{r['dlog_ppl_vs_best']:+.3f} [{d[0]:+.3f}, {d[1]:+.3f}]" if d else "—")
                     + f" | {'yes' if r.get('goal') else ('no' if 'goal' in r else 'reference')} |")
    return "\n".join(lines) + "\n"


def _skill_lines(sk: dict | None) -> list[str]:
    """The bridge's skill against the two null forecasts (:mod:`~simulations.transformer.bridge.skill`), pooled and per variant."""
    if not sk:
        return []
    pooled = sk["pooled"]
    out = ["", f"**Skill against null forecasts** ({sk['metric']}, multiples {', '.join(f'{m}×' for m in sk['multiples'])};"
           " skill = 1 − error/null error; pooled over the left-out variants with a 95% bootstrap interval over "
           f"variants, {next(iter(pooled.values()))['n_boot']} draws): "
           + "; ".join(f"against *{k}* {_f(x['skill'], 2)} [{_f(x['ci_low'], 2)}, {_f(x['ci_high'], 2)}] "
                       f"({x['n_variants']} variants, {'positive' if x['positive'] else '**not shown positive**'})"
                       for k, x in pooled.items()) + ".", "",
           "The *others-median* null forecasts each left-out variant by the median of the other variants' measured "
           "curves: the same information the perplexity law is fitted on, so only skill against it credits the "
           "far-mass prediction itself.", "",
           "| left-out variant | error | error of ≡ 1 | skill vs ≡ 1 | error of like-RoPE | skill vs like-RoPE | "
           "error of others-median | skill vs others-median |",
           "|---|---|---|---|---|---|---|---|"]
    for r in sk["variants"]:
        out.append(f"| {r['variant']} | {_f(r['error'])} | {_f(r['error_flat'])} | {_f(r['skill_flat'], 2)} | "
                   f"{_f(r['error_like-rope'])} | {_f(r['skill_like-rope'], 2)} | "
                   f"{_f(r.get('error_others-median'))} | {_f(r.get('skill_others-median'), 2)} |")
    return out
