"""``paper_checks.md`` section "Retrieval vs perplexity": both horizons per variant, side by side.

Per variant: its perplexity horizon (the first L with PPL(L)/PPL(L_train) ≥ :data:`PPL_HORIZON`,
same-target metric, seed-pooled, from ``cpu_compare.json``), its far-context-use ratio at 16× and
64× (``far_context_cpu.json``), its passkey accuracy at 1×, 4× and 16× (``passkey_cpu.json``) and
what the stylized model predicts for it (qualitative; the stylized ``far-retrieval`` check measures it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from stylized.harness.report import row

#: a variant's perplexity horizon: the first L with PPL(L)/PPL(L_train) at or above this
PPL_HORIZON = 1.5
FAR_MULTIPLES = (16, 64)
PASSKEY_MULTIPLES = (1, 4, 16)
#: what the stylized model predicts for far content retrieval (qualitative)
PREDICTIONS: dict[str, str] = {
    "rope": "kept: RoPE angles are deterministic; a far passkey is found by content through the "
            "low-frequency planes that do not mix (its score λ qᵀE[M]ⁿq stays high there)",
    "random-qk": "lost past the mixing window: accumulated random angles decorrelate a far key from the query, "
                 "E[M]ⁿ → 0 on every plane that mixes; only non-mixing planes keep it",
    "random-qkv": "as random-qk for finding the key; the transported value is also decorrelated (value incoherence)",
    "learned-qk": "lost past the mixing window of the learned accumulated angles (on the planes that mix); "
                  "kept through planes whose learned angles do not mix",
    "learned-qkv": "as learned-qk, with the value transported too",
    "alibi": "suppressed by distance: a far token's weight carries e^{−slope·n}, so retrieval beyond ~1/slope "
             "tokens fails whatever the content",
    "nope": "no prediction from the stylized model (no transport)",
    "path": "no prediction from the stylized model (data-dependent Householder transport)",
}


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def perplexity_horizon(compare: dict, variant: str, threshold: float = PPL_HORIZON) -> str:
    """``"8× (512)"``: the first multiple whose seed-pooled same-target ratio reaches ``threshold``."""
    rs = sorted((r for r in compare.get("rows", []) if r["variant"] == variant and r["metric"] == "target"),
                key=lambda r: r["multiple"])
    if not rs:
        return "not run"
    L_train = compare["params"]["model"]["block_size"]
    for r in rs:
        if r["estimate"] >= threshold:
            return f"{r['multiple']}× ({r['multiple'] * L_train:,}; {r['estimate']:.2f})"
    return f"> {rs[-1]['multiple']}× (max {max(r['estimate'] for r in rs):.2f})"


def _far(far: dict | None, variant: str, m: int) -> str:
    for r in (far or {}).get("rows", []):
        if r["variant"] == variant and r["multiple"] == m:
            return f"{r['ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] {r['use']}"
    return "not run"


def _passkey(pk: dict | None, variant: str, m: int) -> str:
    for r in (pk or {}).get("pooled", []):
        if r["variant"] == variant and r["multiple"] == m:
            return f"{r['accuracy']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
    return "not run"


def retrieval_markdown(results_dir: str | os.PathLike) -> str:
    """The "Retrieval vs perplexity" section from the cpu results in ``results_dir`` (markdown)."""
    d = Path(results_dir)
    compare = _load(d / "cpu_compare.json") or {}
    far = _load(d / "far_context_cpu.json")
    pk = _load(d / "passkey_cpu.json")
    variants = list(dict.fromkeys((compare.get("params") or {}).get("variants", [])
                                  + (far or {}).get("params", {}).get("variants", [])
                                  + (pk or {}).get("params", {}).get("variants", [])))
    out = ["## Retrieval vs perplexity", ""]
    if not variants:
        return "\n".join(out + ["Not run: no cpu comparison, far-context or passkey results in "
                                f"`{d}`.", ""])
    notes = [f"- **Perplexity horizon**: the first L with PPL(L)/PPL(L_train) ≥ {PPL_HORIZON} (same L_train targets "
             "at every length, seed geometric mean; `stylized transformer compare --preset cpu`)."]
    if far:
        p = far["params"]
        notes.append(f"- **Far-context ratio** e^(mean loss with the full L-token window − mean loss with the last "
                     f"L_train tokens), the same targets (up to {p['n_targets']} per window, {p['n_windows']} windows, "
                     f"L_train = {p['L_train']}); < 1: the far context helps. 95% bootstrap over windows and seeds; "
                     "*helps*/*ignored*/*hurts* by whether the interval lies below 1, contains it, or lies above "
                     "(`stylized transformer far-context`).")
    if pk:
        p = pk["params"]
        notes.append(f"- **Passkey accuracy**: a {p['n_digits']}-digit key in corpus text at depths "
                     f"{', '.join(f'{x:g}' for x in p['depths'])}, {p['fraction']:.0%} of training sequences at "
                     f"L_train, {p['steps']} steps, one seed; greedy decoding of every digit; pooled over depths "
                     f"({5 * p['trials']} trials per length up to 16×), 95% Wilson interval; chance "
                     f"{p['chance']:g} (`stylized transformer passkey`).")
    head = row("variant", "perplexity horizon", *(f"far-context ratio {m}×" for m in FAR_MULTIPLES),
               *(f"passkey {m}×" for m in PASSKEY_MULTIPLES), "stylized prediction for far retrieval")
    lines = [head, "|" + "---|" * (3 + len(FAR_MULTIPLES) + len(PASSKEY_MULTIPLES))]
    for v in variants:
        lines.append(row(v, perplexity_horizon(compare, v) if compare else "not run",
                         *(_far(far, v, m) for m in FAR_MULTIPLES), *(_passkey(pk, v, m) for m in PASSKEY_MULTIPLES),
                         PREDICTIONS.get(v, "no prediction from the stylized model")))
    if pk and any(r["multiple"] == 1 and r["accuracy"] < 0.9 for r in pk.get("pooled", [])):
        low = [f"{r['variant']} {r['accuracy']:.2f}" for r in pk["pooled"] if r["multiple"] == 1 and r["accuracy"] < 0.9]
        notes.append(f"- **Below 90% at 1×** (retrieval not learned inside L_train at this budget): {', '.join(low)}; "
                     "the `gpu` preset carries the task (`stylized transformer passkey --preset gpu`).")
    return "\n".join(out + notes + [""] + lines + [""])
