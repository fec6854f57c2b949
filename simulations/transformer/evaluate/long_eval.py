"""One seed of a preset's comparison evaluated past the preset's own multiples: the cpu-long preset to 128×.

The cpu-long comparison (``L_train = 256``) is evaluated to 32× (8,192 tokens) at three seeds.  Here seed 0 of
rope, learned-qk and learned-qkv is evaluated on the same grid of windows to 128× = 32,768 tokens, the length at
which the paper's own Q/K and Q/K/V rows split (they are tied up to 16K).  Nothing is retrained that exists: the
checkpoints on disk are used, a missing one is trained with the preset's code and seed, and its weights digest is
compared with the one the comparison evaluated (``same_run``), so the long curve belongs to the committed run.

Every length reads the same ``n_windows`` window ends (spread over the held-out split so that the longest window
fits, :func:`.evaluate.window_ends`), so PPL(L)/PPL(L_train) is paired within a variant and the learned-qk −
learned-qkv difference is paired across variants.  With one seed, the intervals (paired bootstrap over windows) are
evaluation noise only, not the spread between training seeds: the section describes the run and decides nothing.
The per-window losses go to caches of their own (``eval/<preset>/<name>-to<top>x.json``), never the comparison's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["DEFAULT_MULTIPLES", "DEFAULT_VARIANTS", "PAPER_L_TRAIN", "paper_regime", "result_path", "paired_delta",
           "run_long_eval", "plot_long_eval", "long_eval_section", "cmd_long_eval"]

DEFAULT_MULTIPLES = (1, 2, 4, 8, 16, 32, 64, 128)
DEFAULT_VARIANTS = ("rope", "learned-qk", "learned-qkv")
PAPER_L_TRAIN = 512  # the paper's training length: its ratios sit at multiples of 512 tokens
N_BOOT = 4000


def result_path(root: Path, preset: str, top: int) -> Path:
    """``<root>/runs/<preset>/<preset>_to<top>x.json``."""
    return Path(root) / "runs" / preset / f"{preset}_to{top}x.json"


def paper_at_tokens(variant: str, tokens: int) -> float | None:
    """The paper's PPL(L)/PPL(512) at the same absolute length (``None`` where it reports none)."""
    from .extrapolation import paper_ratio

    m = tokens / PAPER_L_TRAIN
    return paper_ratio(variant, int(m)) if m >= 1 and float(m).is_integer() else None


def paired_delta(a: dict[int, dict], b: dict[int, dict], multiple: int, metric: str, seed: int = 0,
                 n_boot: int = N_BOOT) -> dict:
    """``Δ = log ratio(A) − log ratio(B)`` at ``multiple`` (each ratio to its own 1×), per window then averaged,
    with a 95% paired percentile bootstrap over the shared windows (evaluation noise only)."""
    da = np.asarray(a[multiple][metric]) - np.asarray(a[1][metric])
    db = np.asarray(b[multiple][metric]) - np.asarray(b[1][metric])
    d = da - db
    idx = np.random.default_rng(seed).integers(0, d.size, size=(n_boot, d.size))
    boot = d[idx].mean(axis=1)
    return {"delta_log": float(d.mean()), "ci_low": float(np.percentile(boot, 2.5)),
            "ci_high": float(np.percentile(boot, 97.5)), "n_windows": int(d.size)}


def run_long_eval(root: Path, preset: str = "cpu-long", seed: int = 0, variants=DEFAULT_VARIANTS,
                  multiples=DEFAULT_MULTIPLES, train_missing: bool = True, log=print,
                  cache_dir: Path | None = None) -> dict:
    """Evaluate (training only what is missing) and return the result: rows per variant and multiple (both
    metrics, with the paper's ratio at the same absolute length), the learned-qk − learned-qkv differences, and
    whether each checkpoint is the one the comparison evaluated.  ``cache_dir``: where this evaluation's own
    per-window caches go (default: beside the comparison's; an exploratory run gives its own folder)."""
    from ..data.corpus import load_corpus
    from ..model.presets import EvalConfig, Preset
    from ..paths import checkpoint_path
    from ..train.loop import train
    from ..train.readers import read_cache
    from .extrapolation import eval_cache_path, evaluate_checkpoint, parse_losses, window_ends

    multiples = sorted({int(m) for m in multiples} | {1})
    top = max(multiples)
    config = Preset.from_name(preset, variant=variants[0], seed=seed)
    L_train, tcfg = int(config.model.block_size), config.train
    corpus = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
    window_ends(len(corpus.val), L_train * top, config.eval.n_windows)  # the longest window fits, before any work
    ecfg = EvalConfig(multiples=multiples, n_windows=config.eval.n_windows, batch_tokens=config.eval.batch_tokens)
    where = Path(root) / "runs" / preset
    rows, losses, runs, missing = [], {}, {}, []
    for v in variants:
        path = checkpoint_path(preset, v, seed, where)
        if not path.exists():
            if not train_missing:
                missing.append(v)
                log(f"[long-eval] {v} seed {seed}: no checkpoint on disk (--no-train): left out")
                continue
            log(f"[long-eval] training {v} seed {seed} ({preset})")
            train(config.with_variant(v), resume=True, ckpt=path, corpus=corpus, progress=False, device="cpu")
        tag = f"to{top}x"
        log(f"[long-eval] evaluating {v} seed {seed}")
        for r in evaluate_checkpoint(path, ecfg, corpus, 0, "cpu", cache_tag=tag, cache_dir=cache_dir):
            tokens = int(r["multiple"]) * L_train
            rows.append({**{k: r[k] for k in ("variant", "multiple", "ratio", "ci_low", "ci_high", "ratio_all",
                                              "ci_low_all", "ci_high_all", "ppl", "ppl_all", "n_windows")},
                         "tokens": tokens, "paper": paper_at_tokens(v, tokens)})
        canon = eval_cache_path(path)  # the comparison's cache, and this evaluation's own (both keyed by the weights)
        mine = json.loads((Path(cache_dir) if cache_dir else canon.parent).joinpath(f"{canon.stem}-{tag}.json")
                          .read_text())
        losses[v] = parse_losses(mine["losses"])
        digest = mine["key"]["weights"]
        saved = read_cache(canon, "long-eval", need=("key",))  # unusable: named, and the run counts as not evaluated
        evaluated = saved["key"].get("weights") if saved and isinstance(saved["key"], dict) else None
        runs[v] = {"weights": digest, "comparison_weights": evaluated, "same_run": digest == evaluated,
                   "steps": int(mine["key"]["step"])}
        log(f"[long-eval] {v} seed {seed}: weights {digest} "
            f"({'the comparison' + chr(39) + 's run' if digest == evaluated else 'not the evaluated run'})")
    pairs = []
    if "learned-qk" in losses and "learned-qkv" in losses:
        for metric in ("all", "target"):
            for m in multiples[1:]:
                pairs.append({"row": "learned-qk > learned-qkv", "metric": metric, "multiple": m,
                              "tokens": m * L_train, **paired_delta(losses["learned-qk"], losses["learned-qkv"], m,
                                                                    metric)})
    return {"claim": "transformer-long-eval", "preset": preset, "seed": seed, "L_train": L_train,
            "multiples": multiples, "n_windows": ecfg.n_windows, "corpus": corpus.description, "runs": runs,
            "missing": missing, "rows": rows, "pairs": pairs, "n_boot": N_BOOT,
            "interval": "95% paired percentile bootstrap over the shared windows (evaluation noise only; one seed)"}


def paper_regime(tokens: int) -> str:
    """The paper's Q/K vs Q/K/V regime at an absolute length: tied up to 16K tokens, split from 32K."""
    return "tied (≤ 16K)" if tokens <= 16_384 else ("split (≥ 32K)" if tokens >= 32_768 else "between")


def plot_long_eval(result: dict, path: Path) -> Path:
    """PPL(L)/PPL(L_train) against absolute length, both metrics; the paper's rows (L_train 512) dashed."""
    from stylized.harness import plotting as sp

    @sp.themed
    def draw() -> Path:
        fig, axes = sp.figure(1, 2, height=3.6)
        for ax, (metric, key) in zip(axes, (("author's metric (every position)", "_all"),
                                            ("target metric (last L_train tokens)", ""))):
            for v in dict.fromkeys(r["variant"] for r in result["rows"]):
                rs = sorted((r for r in result["rows"] if r["variant"] == v), key=lambda r: r["tokens"])
                st = sp.variant_style(v)
                x = [r["tokens"] for r in rs]
                ax.plot(x, [r["ratio" + key] for r in rs], "-", marker=st["marker"], color=st["color"], ms=3,
                        label=f"{v} (seed {result['seed']})")
                ax.fill_between(x, [r["ci_low" + key] for r in rs], [r["ci_high" + key] for r in rs],
                                color=st["color"], alpha=0.15, lw=0)
                paper = [(r["tokens"], r["paper"]) for r in rs if r["paper"] is not None]
                if key == "_all" and paper:
                    ax.plot(*zip(*paper), "--", color=st["color"], lw=1, alpha=0.8, label=f"{v}, paper (L_train 512)")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            sp.readable_log_axis(ax.yaxis)
            ax.axhline(1.0, color="k", lw=0.8)
            ax.axvspan(result["L_train"], 16_384, color="0.93", zorder=0)
            ax.axvline(result["L_train"], color="0.5", ls=":", lw=1)
            ax.set_xlabel("context length L (tokens)")
            ax.set_ylabel("PPL(L)/PPL(L_train)")
            ax.set_title(metric)
        if result["rows"]:  # (--no-train with every checkpoint missing: nothing to label)
            axes[0].legend(fontsize=7)
        sp.caption(fig, f"{result['preset']} preset, L_train={result['L_train']}, seed {result['seed']}, "
                        f"{result['n_windows']} shared windows per length; bands: 95% bootstrap over windows "
                        "(evaluation noise only); grey: up to 16K tokens, where the paper's Q/K and Q/K/V rows are tied (they "
                        "split from 32K)")
        return sp.save(fig, Path(path).with_suffix(""))

    return draw()


def long_eval_section(directory: Path, preset: str = "cpu-long", top: int = 128) -> list[str]:
    """The paper_checks.md section, from :func:`result_path` under ``directory/transformer``."""
    from stylized.harness.report import fmt

    path = result_path(Path(directory) / "transformer", preset, top)
    if not path.exists():
        return []
    from ..train.readers import read_json

    r = read_json(path, "long-eval", need=("multiples", "L_train", "runs", "rows", "pairs", "seed", "n_windows",
                                           "interval"))
    ms = r["multiples"]
    lines = [f"### {preset} to {top}× ({top * r['L_train']:,} tokens), one seed", "",
             f"Command: `stylized transformer long-eval --preset {preset}` (results in "
             f"`simulations/results/transformer/runs/{preset}/`; figure `transformer_to{top}x.png` there). Seed "
             f"{r['seed']} of the comparison's runs, the same {r['n_windows']} window ends at every length (so they "
             f"differ from the comparison's, whose longest window is 32×); {r['interval']}. The paper's ratio at the "
             "same absolute length (its L_train is 512) in parentheses. Checkpoints: " + "; ".join(
                 f"{v} {x['weights']} ({'the comparison' + chr(39) + 's run' if x['same_run'] else 'retrained, not bit-identical to the evaluated run'})"
                 for v, x in r["runs"].items()) + ".", "",
             "| variant | metric | " + " | ".join(f"{m}× ({m * r['L_train']:,})" for m in ms) + " |",
             "|---|---|" + "---|" * len(ms)]
    for v in r["runs"]:
        for metric, key in (("author's", "_all"), ("target", "")):
            cells = []
            for m in ms:
                x = next((y for y in r["rows"] if y["variant"] == v and y["multiple"] == m), None)
                if x is None:
                    cells.append("—")
                    continue
                c = f"{fmt(x['ratio' + key], 3)} [{fmt(x['ci_low' + key], 3)}, {fmt(x['ci_high' + key], 3)}]"
                if key == "_all" and x["paper"] is not None:
                    c += f" ({fmt(x['paper'])})"
                cells.append(c)
            lines.append(f"| {v} | {metric} | " + " | ".join(cells) + " |")
    if r["pairs"]:
        lines += ["", "learned-qk − learned-qkv, Δ = log ratio(Q/K) − log ratio(Q/K/V) (> 0 is the paper's side: Q/K "
                  "degrades more), paired over the shared windows; one seed, so this describes the run:", "",
                  "| metric | length | paper's regime | Δ [95% bootstrap over windows] |", "|---|---|---|---|"]
        for x in r["pairs"]:
            lines.append(f"| {x['metric']} | {x['multiple']}× ({x['tokens']:,} tok.) | {paper_regime(x['tokens'])} | "
                         f"{x['delta_log']:+.3f} [{x['ci_low']:+.3f}, {x['ci_high']:+.3f}] |")
    if r.get("missing"):
        lines += ["", "Not on disk when this was run (left out): " + ", ".join(r["missing"]) + "."]
    return lines + [""]


def cmd_long_eval(args) -> int:
    """``stylized transformer long-eval``: evaluate, write the result, its figure and print its section."""
    from stylized.core.errors import InvalidInput
    from stylized.harness.results import atomic_write_text, to_jsonable

    from ..paths import checkpoint_path, destination, results_root
    from ..train.checkpoints import check_dir

    multiples = sorted(set(args.multiples) | {1})
    out = result_path(results_root(), args.preset, max(multiples))
    if not (out.parent / f"{args.preset}_compare.json").exists():
        raise InvalidInput(f"--preset: no committed {args.preset} comparison (run `stylized transformer compare "
                           f"--preset {args.preset}` first)")
    if max(multiples) < 2:
        raise InvalidInput("--multiples: give at least one multiple ≥ 2 (1 is always evaluated)")
    variants = args.variants.split(",")
    gone = [v for v in variants if not checkpoint_path(args.preset, v, args.seed, out.parent).exists()]
    dest = destination("long-eval", args, root=out.parent, figures=out.parent,
                       incomplete=f"--no-train with no checkpoint of {', '.join(gone)}" if args.no_train and gone
                       else None)
    out = dest.root / out.name
    check_dir(out.parent, "results")
    import torch

    torch.set_num_threads(args.threads)
    res = run_long_eval(results_root(), args.preset, args.seed, variants, multiples,
                        train_missing=not args.no_train, cache_dir=None if dest.canonical else dest.root / "eval")
    atomic_write_text(out, json.dumps(to_jsonable(res), indent=1) + "\n")
    fig = plot_long_eval(res, out.with_name(f"transformer_to{max(multiples)}x.png"))
    if dest.canonical:
        print("\n".join(long_eval_section(results_root().parent, args.preset, max(multiples))))
    print(f"wrote {out} and {fig}")
    return 0

