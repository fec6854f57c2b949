"""Unigram or Markov ``χ_b``: which token process forecasts a learned table's decorrelation (issue 26, item 3).

A learned angle table turns text into route angle sums ``A_{n,b} = Σ_{t=j+1}^{j+n} θ_b(x_t)``, a function of the
tokens only, so a head's decorrelation by route length is *measured* exactly on held-out text as
``m_b(n) = mean_j e^{iA_{n,b}}``.  Two forecasts come from the **training** stream only:

* ``unigram``: i.i.d. tokens with the training frequencies, ``χ_bⁿ`` (:class:`~stylized.laws.so2.TokenAngles`);
* ``markov``: the training stream's bigram chain (pseudocount :data:`PSEUDOCOUNT` among the tokens seen),
  ``π D_b (T D_b)^{n−1} 1`` (:meth:`~stylized.laws.markov_tokens.MarkovTokens.route_characteristic`).

**Rule, fixed before either was computed:** the error of a forecast is the mean over planes and route lengths
``n = 1 … L_train`` of ``|m_b(n) − f_b(n)|``; the token process with the smaller error pooled over the
checkpoints is kept, and the verdict per checkpoint is reported beside it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stylized.laws.markov_tokens import MarkovTokens
from stylized.laws.so2 import TokenAngles

__all__ = ["PSEUDOCOUNT", "N_START", "CHECKPOINTS", "bigram_chain", "measured_characteristic", "forecasts", "compare_checkpoint",
           "run_chi_markov", "chi_markov_section", "cmd_chi_markov"]

PSEUDOCOUNT = 1e-3
N_START = 20_000  # route starts j sampled on the held-out stream



def measured_characteristic(table: np.ndarray, tokens: np.ndarray, ns: np.ndarray, seed: int = 0) -> np.ndarray:
    """``m_b(n) = mean_j e^{iA_{n,b}}`` over :data:`N_START` starts ``j`` of ``tokens``: ``(len(ns), planes)``."""
    nmax = int(np.max(ns))
    starts = np.random.default_rng(seed).integers(0, tokens.size - nmax - 1, N_START)
    where = {int(n): k for k, n in enumerate(ns)}
    out = np.empty((len(ns), table.shape[1]), complex)
    acc = np.zeros((N_START, table.shape[1]))
    for n in range(1, nmax + 1):
        acc += table[tokens[starts + n]]
        if n in where:
            out[where[n]] = np.exp(1j * acc).mean(0)
    return out


def bigram_chain(train: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The training stream's token process on the tokens it contains: ``(seen, unigram p, transition T)``, the
    bigram counts with pseudocount :data:`PSEUDOCOUNT` in every cell, rows normalised."""
    train = np.asarray(train, dtype=np.int64)
    seen = np.unique(train)
    lab = np.searchsorted(seen, train)
    V = seen.size
    counts = np.bincount(lab[:-1] * V + lab[1:], minlength=V * V).reshape(V, V) + PSEUDOCOUNT
    return seen, np.bincount(lab, minlength=V) / lab.size, counts / counts.sum(1, keepdims=True)


def forecasts(table: np.ndarray, train: np.ndarray, ns: np.ndarray) -> dict[str, np.ndarray]:
    """``unigram`` and ``markov`` forecasts of ``m_b(n)`` from the training stream: each ``(len(ns), planes)``."""
    seen, p, transition = bigram_chain(train)
    tab = table[seen]
    d = 2 * tab.shape[1]
    uni = TokenAngles(d, table=tab, probs=p)
    mk = MarkovTokens(d, table=tab, transition=transition)
    return {"unigram": uni.chi()[None, :] ** ns[:, None], "markov": np.asarray(mk.route_characteristic(ns))}


def compare_checkpoint(table: np.ndarray, train: np.ndarray, val: np.ndarray, L_train: int, seed: int = 0) -> dict:
    """Errors of both forecasts against the held-out measurement (module doc), and ``|m_b(n)|`` summaries."""
    ns = np.arange(1, L_train + 1)
    m = measured_characteristic(table, val, ns, seed)
    f = forecasts(table, train, ns)
    err = {k: float(np.mean(np.abs(m - v))) for k, v in f.items()}
    noise = 1.0 / np.sqrt(N_START)  # sampling sd of one |m_b(n)| entry near 0
    return {"error": err, "better": min(err, key=err.get), "noise_floor": noise,
            "mean_abs_measured_at": {str(int(n)): float(np.mean(np.abs(m[n - 1]))) for n in (1, 4, 16, L_train)},
            "mean_abs_forecast_at": {k: {str(int(n)): float(np.mean(np.abs(v[n - 1]))) for n in (1, 4, 16, L_train)}
                                     for k, v in f.items()}}


#: the checkpoints compared: (preset, path under results/transformer), every learned table on disk here
CHECKPOINTS = tuple(("cpu-long", f"runs/cpu-long/checkpoints/cpu-long/{v}{s}.pt")
                    for v in ("learned-qk", "learned-qkv") for s in ("", "-s1", "-s2")) + tuple(
    ("cpu", f"checkpoints/cpu-ab/learned-qk-base-s{s}.pt") for s in (0, 1, 2))


def run_chi_markov(root: Path, checkpoints=CHECKPOINTS, log=print) -> dict:
    """Every layer of every checkpoint found under ``root`` (``results/transformer``); the kept process."""
    from ..data.corpus import load_corpus
    from ..evaluate.probe import layer_family, token_frequencies
    from ..model.presets import Preset
    from ..train.loop import load_model

    corpora, rows, missing = {}, [], []
    for preset, rel in checkpoints:
        path = root / rel
        if not path.exists():
            missing.append(rel)
            continue
        if preset not in corpora:
            tcfg = Preset.from_name(preset).train
            corpora[preset] = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
        c = corpora[preset]
        model, _ = load_model(path, "cpu", label="checkpoint")
        probs = token_frequencies(c.train, c.vocab_size)
        for layer, blk in enumerate(model.blocks):
            table = np.asarray(layer_family(blk.attn, probs).table)
            r = compare_checkpoint(table, np.asarray(c.train), np.asarray(c.val), model.config.block_size)
            rows.append({"preset": preset, "checkpoint": rel, "variant": model.config.variant, "layer": layer, **r})
            log(f"{rel} layer {layer}: unigram {r['error']['unigram']:.4f}, markov {r['error']['markov']:.4f}")
    pooled = {k: float(np.mean([r["error"][k] for r in rows])) for k in ("unigram", "markov")} if rows else {}
    return {"rule": __doc__.split("**Rule, fixed before either was computed:**")[1].strip(), "rows": rows,
            "missing": missing, "pooled_error": pooled, "kept": min(pooled, key=pooled.get) if pooled else None,
            "n_markov_better": sum(r["better"] == "markov" for r in rows), "n": len(rows)}


def chi_markov_section(res: dict) -> list[str]:
    """paper_checks lines: the rule, the pooled errors, the kept process, the count per layer."""
    if not res.get("rows"):
        return []
    from ..recall.forecast_report import plain_rule

    p = res["pooled_error"]
    cks = sorted({r["checkpoint"] for r in res["rows"]})
    return ["### Unigram or Markov χ_b: the token process behind a learned table (issue 26, item 3)", "",
            "Command: `stylized transformer chi-markov` (`simulations/transformer/bridge/chi_markov.py`). Measured: each "
            "layer's route characteristic m_b(n) = mean e^{iA_{n,b}} on held-out text (20,000 starts; sampling sd "
            f"≈ {res['rows'][0]['noise_floor']:.3f} per entry); forecasts from the training stream only. "
            f"Rule: {plain_rule(res['rule'])}", "",
            "| checkpoint | layers | error, unigram | error, Markov | Markov better |", "|---|---|---|---|---|",
            *[f"| `{c}` | {len(rs)} | {np.mean([r['error']['unigram'] for r in rs]):.4f} | "
              f"{np.mean([r['error']['markov'] for r in rs]):.4f} | {sum(r['better'] == 'markov' for r in rs)}/{len(rs)} |"
              for c in cks for rs in [[r for r in res['rows'] if r['checkpoint'] == c]]], "",
            f"{len(cks)} checkpoints ({', '.join(sorted({r['preset'] for r in res['rows']}))} presets), "
            f"{res['n']} layers: mean error unigram {p['unigram']:.4f}, Markov {p['markov']:.4f}; Markov is better "
            f"in {res['n_markov_better']} of {res['n']} layers. **Kept: {res['kept']}.** The bridge (`stylized transformer "
            "bridge`) takes every learned table's route characteristic from the kept process: the training stream's "
            "bigram chain, m_b(n) = π D_b (T D_b)^{n−1} 1 at every distance n (its parameters name the token process).", ""]


def cmd_chi_markov(args) -> int:
    """Unigram or Markov χ_b as the forecast of each learned table's decorrelation on held-out text."""
    import json

    from stylized.core.errors import InvalidInput
    from stylized.harness.results import atomic_write_text, to_jsonable

    from ..paths import destination, results_root
    from ..train.checkpoints import check_dir

    gone = [rel for _, rel in CHECKPOINTS if not (results_root() / rel).exists()]
    if len(gone) == len(CHECKPOINTS):
        raise InvalidInput("chi-markov: no learned-table checkpoint on disk (train the cpu-long or author-ab runs first)")
    dest = destination("chi-markov", args, incomplete=f"{len(gone)} of {len(CHECKPOINTS)} checkpoints not on disk"
                       if gone else None)
    out = dest.root / "chi_markov.json"
    check_dir(out.parent, "results")
    res = run_chi_markov(results_root())
    atomic_write_text(out, json.dumps(to_jsonable(res), indent=1) + "\n")
    print(f"kept {res['kept']}: pooled error {res['pooled_error']}; Markov better in {res['n_markov_better']}/{res['n']} "
          f"layers; wrote {out}")
    return 0
