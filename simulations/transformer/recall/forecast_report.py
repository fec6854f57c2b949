"""The recall forecast beside the measurement: a paper_checks section and two figures (issue 26, items 2 and 4).

Reads ``recall_forecast.json`` (:mod:`~simulations.transformer.recall.forecast_run`), ``recall_cpu.json`` (the measurement) and, for the
perplexity skill, ``bridge_cpu.json`` (:mod:`~simulations.transformer.bridge.skill`'s table).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from .forecast import VERSIONS
from .report import L_TRAIN, table

__all__ = ["plain_rule", "forecast_section", "plot_forecast", "plot_skill"]

def plain_rule(text: str) -> str:
    """A docstring's rule as one markdown line: reST roles and double backticks become code spans."""
    text = re.sub(r":\w+:`[.~]?([^`]+)`", r"`\1`", " ".join(text.split()))
    return text.replace("``", "`")



def _h(h: int, censored: int) -> str:
    return f"> {censored // 2:,}" if h >= censored else f"{h:,}"


def forecast_section(fc: dict) -> list[str]:
    """Markdown lines: the rule, per variant the measured and forecast horizons, the verdict and the skill."""
    v = fc["verdict"]
    cen = v["censored"]
    mae = v["mae_ln_horizon"]
    kept = v["scored"]
    cpu = [r.get("forecast_cpu_s") or 0.0 for r in fc["runs"]]
    lines = ["#### Forecast of the horizon from each checkpoint's own step law (issue 26, item 2)", "",
             "Command: `stylized transformer recall-forecast` (`simulations/transformer/recall/forecast.py`). Every "
             "input is measured on sequences of L_train = 64 tokens: the last layer's retrieving head (the head and "
             "target offset with the most top-1 hits), its unrotated queries, target keys and haystack keys, and per "
             "token the steps it applied (plane angles, PaTH's β and w, FoX's log f, ALiBi's slope). The forecast "
             f"is the probability that the target holds the head's top logit, over {fc['runs'][0]['trials']} stylized "
             "contexts per distance whose tokens come from a token process (unigram or Markov, fitted on the L_train "
             "streams; or *task-layout*, the task's own sequences at each length, which reads the evaluation "
             "distribution's layout) and whose keys and steps are those measured for each token. Cost: "
             f"{sum(cpu):.0f} CPU s for {len(cpu)} checkpoints (training aside).", "",
             f"Rule (it reads no horizon, measured or forecast): {plain_rule(v['rule'])}", "",
             "| variant | measured horizon | " + " | ".join(f"forecast ({x})" for x in VERSIONS) +
             f" | within ×2 ({kept}, scored) |", "|---|---|" + "---|" * len(VERSIONS) + "---|"]
    for r in v["variants"]:
        lines.append("| " + " | ".join([r["variant"], _h(r["measured_horizon"], cen),
                                        *[_h(r[x]["horizon"], cen) for x in VERSIONS],
                                        "yes" if r[kept]["holds"] else "**no**"]) + " |")
    lines += ["", "Skill = 1 − mean |ln(forecast / measured horizon)| / the null's, over the variants, with a 95% "
              f"percentile bootstrap interval over the variants ({_n_boot(v)} draws); the scored process is **{kept}** "
              "(the rule above); the others are reported, not scored.", "",
              "| token process | mean abs. ln error | skill vs *keeps its 1× accuracy* | skill vs *falls to chance past "
              "L_train* |", "|---|---|---|---|"]
    for x in VERSIONS:
        sk = v["skill"][x]
        lines.append("| " + " | ".join([x + (" (scored)" if x == kept else ""), f"{mae[x]:.2f}",
                                        *(_skill(sk[n]) for n in ("keeps", "falls"))]) + " |")
    lines += ["", f"Null errors: *keeps* {mae['keeps']:.2f}, *falls* (horizon {v['falls_horizon']}) {mae['falls']:.2f}. "
              f"**{v['n_holding']} of {v['n_variants']} variants within a factor 2 ({kept}); the scored forecast "
              f"{'beats both nulls' if v['beats_both_nulls'] else 'does not beat both nulls'}.** "
              "Figures: `figures/transformer_recall_forecast.png`, `figures/transformer_forecast_skill.png`.", "",
              "Reading: the unigram and Markov token processes are fitted on the 64-token layouts, where keys and "
              "values fill a quarter of the positions; at long distances the task's sequences are mostly filler, so "
              "those two versions put too many strong haystack keys in every far context and forecast a fall just "
              "past L_train for every variant (no better than that null). The task-layout version takes the tokens "
              "from the task's own generator at each length, with every key and step still the ones measured at "
              "L_train: it reads the evaluation distribution's layout, so its skill is not an L_train-only forecast's. A miss *contradicts* the forecast and is kept: PaTH's forecast is below 0.5 already at "
              "d = 16 (0.06–0.48 by seed, against measured top-1 shares of 0.34–0.98): its steps depend on the "
              "neighbouring tokens (a short convolution), and drawing each step by its token alone loses the "
              "alignment the lookup uses, so PaTH's steps are not a per-token law; NoPE's forecast stays flat "
              "near 0.6 while the model falls to 0.5 by 512.", ""]
    return lines


def _n_boot(v: dict) -> int:
    return next(iter(next(iter(v["skill"].values())).values()))["n_boot"]


def _skill(sk: dict) -> str:
    if sk.get("skill") is None:
        return "undefined (null exact)"
    return f"{sk['skill']:+.2f} [{sk['ci_low']:+.2f}, {sk['ci_high']:+.2f}]"


def plot_forecast(fc_path: Path, recall_path: Path, out_png: Path) -> Path:
    """One panel per variant: measured accuracy (seed mean, band: seed range) and the forecast curves."""
    from stylized.harness import plotting as sp

    fc = json.loads(Path(fc_path).read_text())
    tab = table(json.loads(Path(recall_path).read_text()))
    rows = {r["variant"]: r for r in fc["verdict"]["variants"]}
    names = sorted(rows)
    kept = fc["verdict"]["scored"]
    with sp.theme():
        fig, axes = sp.figure(math.ceil(len(names) / 3), 3, height=2.0 * math.ceil(len(names) / 3))
        axes = np.ravel(axes)
        for ax, v in zip(axes, names):
            cells = tab[v]["cells"]
            ds = sorted(cells)
            ax.plot(ds, [cells[d]["mean"] for d in ds], "o-", color="k", ms=3, lw=1.2, label="measured")
            ax.fill_between(ds, [cells[d]["lo"] for d in ds], [cells[d]["hi"] for d in ds], color="k", alpha=0.12,
                            lw=0)
            for x, st in zip(VERSIONS, ("--", ":", "-")):
                c = rows[v][x]["curve"]
                xs = sorted(int(d) for d in c)
                ax.plot(xs, [c[str(d)] for d in xs], st, lw=2.0 if x == kept else 1.0,
                        color=sp.variant_style(v, 0).get("color"), label=f"forecast ({x})")
            ax.axvline(L_TRAIN, color="0.5", lw=0.7, ls="--")
            ax.axhline(0.5, color="0.7", lw=0.6, ls=":")
            ax.set_xscale("log", base=2)
            ax.set_ylim(0, 1.02)
            ax.set_title(v, fontsize=8)
            ax.tick_params(labelsize=6)
        for ax in axes[len(names):]:
            ax.set_visible(False)
        axes[0].legend(fontsize=5.5, loc="lower left")
        fig.supxlabel("key → query distance (tokens)", fontsize=8)
        fig.supylabel("accuracy / forecast P(target on top)", fontsize=8)
        sp.caption(fig, "MQAR accuracy (black: seed mean, band: seed range) and the forecast from each checkpoint's "
                        "own step law and content, measured at L_train = 64 only (coloured; thick: the token "
                        "process scored by the rule). Dashed vertical: L_train; dotted: the 0.5 horizon level.")
        return sp.save(fig, out_png)


def plot_skill(fc: dict, bridge: dict | None, out_png: Path) -> Path:
    """Forecast skill per variant (1 − error/null error) for retrieval and, when given, for perplexity."""
    from stylized.harness import plotting as sp

    v = fc["verdict"]
    kept = v["scored"]
    per = {r["variant"]: {n: (1 - r[kept]["ln_error"] / x if x > 0 else None) for n, x in r["null_ln_error"].items()}
           for r in v["variants"]}
    panels = [("retrieval horizon", per, ("keeps", "falls"))]
    if bridge is not None and bridge.get("lovo") and bridge.get("verdict"):
        from ..bridge.ppl import rejudged

        sk = rejudged(bridge)["skill"]
        from ..bridge.skill import NULLS

        panels.append(("perplexity ratio (bridge)", {p["variant"]: {n: p.get(f"skill_{n}") for n in NULLS}
                                                     for p in sk["variants"]}, NULLS))
    with sp.theme():
        fig, axes = sp.figure(1, len(panels), height=3.2)
        for ax, (title, tab, nulls) in zip(np.ravel(axes), panels):
            names = sorted(tab)
            y = np.arange(len(names))
            width = 0.76 / len(nulls)
            for k, n in enumerate(nulls):
                vals = [tab[m][n] if tab[m][n] is not None else np.nan for m in names]
                ax.barh(y + (k - (len(nulls) - 1) / 2) * width, np.clip(vals, -2, 1), height=width * 0.95,
                        label=f"vs null '{n}'")
            ax.axvline(0, color="k", lw=0.8)
            ax.set_yticks(y, names, fontsize=7)
            ax.set_xlim(-2.05, 1.05)
            ax.set_xlabel("skill = 1 − error / null error (clipped at −2)", fontsize=7)
            ax.set_title(title, fontsize=8)
            ax.legend(fontsize=6, loc="lower left")
        sp.caption(fig, "Skill of each forecast against its null forecasts, per variant: 1 is perfect, 0 no better than "
                        "the null, below 0 worse. Retrieval: |ln| error of the horizon; nulls 'keeps its 1× accuracy' and "
                        "'falls to chance past L_train' (the scored token process). Perplexity: the bridge's left-out "
                        "forecasts; nulls ≡ 1, 'degrades like RoPE' and 'others-median' (the median of the other "
                        "variants' measured curves: the same information as the bridge's law). No bar: the null is exact for that variant (skill undefined).")
        return sp.save(fig, out_png)
