"""Command line: ``stylized transformer {train,eval,compare,bridge,combined,probe,...}``.

The main ``stylized`` CLI calls :func:`add_parser` with its sub-parsers and then
``args.func(args)``; ``python -m simulations.transformer ...`` uses :func:`main`.
Configuration errors (``ValueError``) exit with status 2 and one line.  Only a command's full default run
writes its committed results; any other run writes under ``exploratory/<command>/`` (:mod:`.canonical`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from stylized.core.errors import InvalidInput
from stylized.core.options import Choice, Choices, Float, FloatList, Int, IntList, arg_type

from .canonical import destination, remember_defaults, split_roots
from .cli_guard import guard as _guard
from .fileio import check_dir
from .model import MAIN_VARIANTS, VARIANTS

PRESET_NAMES = ("smoke", "cpu", "cpu-long", "gpu", "paper")
TOKENIZER = arg_type(Choice("bytes", "bpe"))


def _check(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of: {', '.join(allowed)}")


def cmd_train(args: argparse.Namespace) -> int:
    from .train import train

    _check("variant", args.variant, VARIANTS)
    _check("preset", args.preset, PRESET_NAMES)
    if args.resume and args.force:
        raise InvalidInput("--resume with --force: --resume continues the checkpoint, --force retrains over it; pass one")
    from .train import checkpoint_path

    # other steps, data or tokenizer: the checkpoint goes under exploratory/train/, never where the commands that
    # write committed results resume it
    dest = destination("train", args, subsets=())
    results_dir = args.results_dir or (None if dest.canonical else str(dest.root))
    path = checkpoint_path(args.preset, args.variant, args.seed, results_dir)
    check_dir(path.parent, "--results-dir")  # before any work (train checks again, for its other callers)
    if path.exists() and not (args.resume or args.force):
        raise ValueError(f"checkpoint {path} exists: pass --resume to continue it or --force to retrain over it")
    if path.exists() and args.force and not args.resume:
        try:
            path.unlink()
        except OSError as e:
            raise InvalidInput(f"--force: cannot remove {path} ({e.strerror or type(e).__name__})") from None
    info = train(args.variant, args.preset, steps=args.steps, seed=args.seed, data=args.data,
                 resume=args.resume, results_dir=results_dir, tokenizer=args.tokenizer, bpe_vocab=args.bpe_vocab)
    h = info["history"]
    print(f"trained {args.variant} ({args.preset}) to step {info['step']}; "
          f"last loss {h[-1][1]:.4f}; checkpoint {info['checkpoint']}" if h else
          f"nothing to do: checkpoint {info['checkpoint']} already at step {info['step']}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from .evaluate import evaluate_checkpoint
    from .train import checkpoint_path, make_configs

    _check("variant", args.variant, VARIANTS)
    _check("preset", args.preset, PRESET_NAMES)
    _, _, ecfg = make_configs(args.variant, args.preset)
    path = checkpoint_path(args.preset, args.variant, args.seed, args.results_dir)
    if not path.exists():
        raise ValueError(f"checkpoint={str(path)!r} does not exist; run 'train' first")
    rows = evaluate_checkpoint(path, ecfg, seed=args.seed)
    print(f"{'L':>7} {'mult':>5} {'ppl':>9} {'ratio':>7} {'95% CI':>17} {'loss_beyond':>12}")
    for r in rows:
        beyond = "n/a" if math.isnan(r["loss_beyond"]) else f"{r['loss_beyond']:.4f}"  # 1×: no position beyond
        print(f"{r['L']:7d} {r['multiple']:5d} {r['ppl']:9.3f} {r['ratio']:7.3f} "
              f"[{r['ci_low']:6.3f},{r['ci_high']:6.3f}] {beyond:>12}")
    if args.json:
        from stylized.harness.results import to_jsonable

        print(json.dumps(to_jsonable(rows)))  # strict JSON: an undefined value is null, never NaN
    return 0


def _seed_list(name: str, text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{name}={text!r} must be a comma-separated list of integers ≥ 0") from None
    if not out or min(out) < 0:
        raise ValueError(f"{name}={text!r} must be a non-empty comma-separated list of integers ≥ 0")
    return out


def cmd_compare(args: argparse.Namespace) -> int:
    from .compare import compare

    _check("preset", args.preset, PRESET_NAMES)
    variants = [v.strip() for v in args.variants.split(",")] if args.variants else None
    for v in variants or []:
        _check("variants", v, VARIANTS)
    results_dir, out_root = split_roots("compare", args, ("variants", "seeds", "extra_seeds"),
                                        preset=args.preset + ("-bpe" if args.tokenizer == "bpe" else ""))
    res = compare(args.preset, variants, seeds=_seed_list("--seeds", args.seeds),
                  extra_seeds=_seed_list("--extra-seeds", args.extra_seeds), steps=args.steps, data=args.data,
                  results_dir=results_dir, figure=args.figure, workers=args.workers,
                  tokenizer=args.tokenizer, bpe_vocab=args.bpe_vocab, out_root=out_root)
    for r in res["verdicts"]["all"]["rows"]:
        print(f"  {r['row']}: {r['verdict']}")
    print(f"holds={res['holds']} (C6 holds when no paper row contradicts; author's metric at "
          f"{res['verdicts']['all']['multiple']}x)")
    print(f"wrote {res['files']['csv']}, {res['files']['json']}, {res['files']['figure']} "
          f"in {res['seconds']:.0f}s")
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    """Multi-query associative recall: train every variant at every seed (resuming), then the table and figure."""
    from .fileio import check_dir
    from .recall_report import plot_recall, summary_lines
    from .recall_sweep import VARIANTS_RECALL, load_results, run_sweep, write_results
    from .train import results_root

    dest = destination("recall", args)
    out = dest.root / "recall_cpu.json"
    check_dir(out.parent, "results")
    check_dir(dest.figures, "figures/")
    variants = args.variants.split(",") if args.variants else list(VARIANTS_RECALL)
    if not dest.canonical and not out.exists() and (results_root() / out.name).exists():
        # a subset starts from the committed runs it asks for (same settings: not run again)
        runs = [r for r in load_results(results_root() / out.name)["runs"]
                if r["variant"] in variants and r["seed"] in args.seeds]
        if runs:
            write_results(runs, out)
    data = {}
    for seed in args.seeds:
        data = run_sweep(variants, seed, n_seqs=args.n_seqs, out=out)
    fig = plot_recall(out, dest.figures / "transformer_recall.png")
    print("\n".join(summary_lines(data)))
    print(f"wrote {out}, {fig}")
    return 0


def cmd_recall_forecast(args: argparse.Namespace) -> int:
    """Forecast each recall checkpoint's horizon from its own step law; judge it against the two null forecasts."""
    from .fileio import check_dir
    from .readers import read_json
    from .recall_forecast_report import plot_forecast, plot_skill
    from .recall_forecast_run import run_forecasts
    from .recall_sweep import VARIANTS_RECALL
    from .train import results_root

    measured = results_root() / "recall_cpu.json"
    if not measured.exists():
        raise InvalidInput(f"recall-forecast: no recall measurement at {measured}: run `stylized transformer "
                           "recall` first")
    read_json(measured, "recall-forecast", need=("runs",))  # a damaged measurement: one line naming it
    dest = destination("recall-forecast", args)
    out = dest.root / "recall_forecast.json"
    check_dir(out.parent, "results")
    check_dir(dest.figures, "figures/")
    variants = args.variants.split(",") if args.variants else list(VARIANTS_RECALL)
    res = run_forecasts(variants, args.seeds, args.trials, path=out, sweep_path=measured)
    v = res["verdict"]
    bridge = results_root() / "bridge_cpu.json"
    figs = [plot_forecast(out, measured, dest.figures / "transformer_recall_forecast.png"),
            plot_skill(res, read_json(bridge, "recall-forecast") if bridge.exists() else None,
                       dest.figures / "transformer_forecast_skill.png")]
    for r in v["variants"]:
        print(f"  {r['variant']}: measured {r['measured_horizon']}, forecast "
              + ", ".join(f"{x} {r[x]['horizon']}" for x in ("unigram", "markov", "task-layout")))
    for x, sk in v["skill"].items():
        print(f"  skill of {x}: " + "; ".join(f"vs {n} {s['skill']} [{s['ci_low']}, {s['ci_high']}]" for n, s in sk.items()))
    print(f"scored {v['scored']}: {v['n_holding']}/{v['n_variants']} within x2; mean |ln error| {v['mae_ln_horizon']}; "
          f"beats both nulls: {v['beats_both_nulls']}")
    print(f"wrote {out}, " + ", ".join(map(str, figs)))
    return 0


def cmd_author_ab(args: argparse.Namespace) -> int:
    """Each of the author's model points the cpu preset does not take, A/B on learned-qk at 3 seeds."""
    from .author_ab import ab_table, missing, run_one, summary_lines, trains, write_ab
    from .fileio import check_dir
    from .jobs import map_jobs
    from .train import results_root

    check_dir(results_root() / "checkpoints" / "cpu-ab", "results")
    todo = missing()
    if todo:
        print(f"[author-ab] {len(todo)} runs to train or evaluate (~2 min each on a free core)", flush=True)
        # the arms that train first; then the evaluation-only arms, which read the baseline's checkpoints
        for wave in ([t for t in todo if trains(t[0])], [t for t in todo if not trains(t[0])]):
            map_jobs(run_one, wave, wave, args.workers)
    res = ab_table()
    path = write_ab(res)
    print("\n".join(summary_lines(res)))
    print(f"wrote {path}")
    return 0


def cmd_lr_robustness(args: argparse.Namespace) -> int:
    """``learned-qk > learned-qkv`` per table-lr multiplier at 3 seeds: train what is missing, decide, draw."""
    from stylized.harness.results import figures_dir

    from .fileio import check_dir
    from .lr_robustness import missing_runs, robustness, summary_lines, train_missing, write_robustness
    from .train import results_root

    check_dir(figures_dir(), "figures/")
    check_dir(results_root(), "results")
    todo = missing_runs()
    if todo and args.no_train:
        raise ValueError(f"--no-train: {len(todo)} runs have no evaluation cache (first: {todo[0]}); "
                         "run without --no-train to train them")
    if todo:
        print(f"[lr-robustness] training and evaluating {len(todo)} missing runs (~2 min each on a free core)", flush=True)
        train_missing(workers=args.workers)
    res = robustness()
    path = write_robustness(res, figure=figures_dir() / "transformer_lr_robustness.png")
    print("\n".join(summary_lines(res)))
    print(f"{res['row']}: {res['counts']} over {len(res['rows'])} (metric, multiplier, length) cells; wrote {path}")
    return 0


def cmd_lr_sweep(args: argparse.Namespace) -> int:
    from .lr_sweep import MULTS, SWEEP_VARIANTS, run_sweep, write_sweep
    from .presets import get_preset

    mults = MULTS
    if args.mults:
        try:
            mults = tuple(float(x) for x in args.mults.split(",") if x.strip())
        except ValueError:
            raise ValueError(f"--mults={args.mults!r} must be a comma-separated list of numbers > 0") from None
        if not mults or min(mults) <= 0:
            raise ValueError(f"--mults={args.mults!r} must be a comma-separated list of numbers > 0")
    variants = tuple(v for v in (args.variants or ",".join(SWEEP_VARIANTS)).split(",") if v)
    if "learned-qk" not in variants:
        raise InvalidInput(f"--variants={args.variants!r} must include learned-qk (the rule reads it)")
    dest = destination("lr-sweep", args)  # fewer multipliers or variants: under exploratory/, never the committed file
    new = [m for m in mults if m not in MULTS]  # a multiplier of its own: its checkpoints and caches there too
    res = run_sweep(mults, variants, workers=args.workers, preset=args.preset,  # (--threads: set by the guard)
                    root=dest.root if new and not dest.canonical else None)
    fig = "transformer_lr_sweep.png" if args.preset == "cpu" else f"transformer_lr_sweep_{args.preset}.png"
    path = write_sweep(res, figure=dest.figures / fig, root=None if dest.canonical else dest.root)
    for r in res["rows"]:
        print(f"{r['variant']} x{r['mult']:g}: val PPL {r['ppl']:.3f}, move {r['move_mean_rad']:.3f} rad, "
              f"{r['planes_mixing']}/{r['planes']} planes mix, active={r['active']}")
    uses = get_preset(args.preset)["model"]["angle_lr_mult"]
    print(f"chosen x{res['chosen']} (the {args.preset} preset uses x{uses:g})" + (f"; wrote {path}" if path else ""))
    return 0 if res["chosen"] == uses else 1


def _variant_list(text: str | None) -> list[str] | None:
    variants = [v.strip() for v in text.split(",") if v.strip()] if text else None
    for v in variants or []:
        _check("--variants", v, VARIANTS)
    return variants


def cmd_far_context(args: argparse.Namespace) -> int:
    from .far_context import run_far_context

    _check("--preset", args.preset, PRESET_NAMES)
    from .train import run_root

    dest = destination("far-context", args, root=run_root(args.preset, None)[0])  # a subset: all under exploratory/
    res = run_far_context(args.preset, _variant_list(args.variants), workers=args.workers, threads=args.threads,
                          results_dir=None if dest.canonical else dest.root)
    for r in res["rows"]:
        if r["multiple"] in (16, 64) or r["multiple"] == max(res["params"]["multiples"]):
            print(f"  {r['variant']:>12} {r['multiple']:4d}x: far-context ratio {r['ratio']:.3f} "
                  f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] ({r['use']}, {r['seeds']} seed(s))")
    print(f"wrote {res['files']['json']}, {res['files']['csv']}, {res['files']['figure']} in {res['seconds']:.0f}s")
    return 0


def cmd_passkey(args: argparse.Namespace) -> int:
    from .passkey import run_passkey

    _check("--preset", args.preset, PRESET_NAMES)
    from .train import run_root

    dest = destination("passkey", args, root=run_root(args.preset, None)[0])  # a subset: all under exploratory/
    res = run_passkey(args.preset, _variant_list(args.variants), workers=args.workers, threads=args.threads,
                      results_dir=None if dest.canonical else dest.root, trials=args.trials, fraction=args.fraction)
    for v, acc in res["summary"].items():
        print(f"  {v:>12}: " + " ".join(f"{m}x {a:.2f}" for m, a in acc.items()))
    print(f"wrote {res['files']['json']}, {res['files']['csv']}, {res['files']['figure']} in {res['seconds']:.0f}s")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``transformer`` sub-command (with train / eval / compare)."""
    p = subparsers.add_parser(
        "transformer", help="length extrapolation of small GPTs with accumulated transports"
    )
    sub = p.add_subparsers(dest="transformer_cmd", metavar="{train,eval,compare,bridge,combined,probe,...}")
    sub.required = True

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--preset", default="smoke", type=arg_type(Choice(*PRESET_NAMES)), help=f"one of {', '.join(PRESET_NAMES)}")
        sp.add_argument("--seed", type=arg_type(Int(0, 2**32 - 1)), default=0)
        sp.add_argument("--results-dir", default=None,
                        help="default simulations/results/transformer")
        sp.add_argument("--threads", type=arg_type(Int(1, 256)), default=None,
                        help="torch CPU threads (1 avoids oversubscription on a busy machine)")

    t = sub.add_parser("train", help="train one variant (checkpointed)")
    t.add_argument("--variant", required=True, type=arg_type(Choice(*VARIANTS)), help=f"one of {', '.join(VARIANTS)}")
    common(t)
    t.add_argument("--resume", action="store_true", help="continue from the checkpoint")
    t.add_argument("--force", action="store_true", help="retrain over an existing checkpoint")
    t.add_argument("--steps", type=arg_type(Int(1, 10**7)), default=None)
    t.add_argument("--data", default=None,
                   help="builtin (default), owt[:FOLDER] (local OpenWebText, else $STYLIZED_OWT_DIR), or a text file/folder")
    t.add_argument("--tokenizer", default=None, type=TOKENIZER,
                   help="bytes (default) or a locally trained byte-level BPE")
    t.add_argument("--bpe-vocab", type=arg_type(Int(257, 10**6)), default=None, help="BPE vocabulary (default 4096; paper preset 32768)")
    t.set_defaults(func=_guard(cmd_train))

    e = sub.add_parser("eval", help="perplexity at 1x..64x/128x the training length")
    e.add_argument("--variant", required=True, type=arg_type(Choice(*VARIANTS)), help=f"one of {', '.join(VARIANTS)}")
    common(e)
    e.add_argument("--json", action="store_true", help="also print the rows as JSON")
    e.set_defaults(func=_guard(cmd_eval))

    c = sub.add_parser("compare", help="train missing variants, evaluate all, write csv/json/png")
    common(c)
    c.add_argument("--variants", default=None, type=arg_type(Choices(*VARIANTS), keep_text=True),
                   help=f"comma-separated (default {','.join(MAIN_VARIANTS)})")
    c.add_argument("--seeds", default=None, type=arg_type(IntList(0, 2**32 - 1), keep_text=True), help="seeds of rope, random-*, learned-* (default: the preset's; cpu: 0-2, learned-* 0-4)")
    c.add_argument("--extra-seeds", default=None, type=arg_type(IntList(0, 2**32 - 1), keep_text=True), help="seeds of the other variants (default: the preset's; cpu: alibi, nope, path 0-2, others 0)")
    c.add_argument("--workers", type=arg_type(Int(1, 64)), default=1,
                   help="(variant, seed) jobs run at once, one torch thread each (default 1; 2 on a 2-core machine)")
    c.add_argument("--steps", type=arg_type(Int(1, 10**7)), default=None)
    c.add_argument("--data", default=None)
    c.add_argument("--tokenizer", default=None, type=TOKENIZER,
                   help="bytes (default) or a locally trained byte-level BPE (results under runs/<preset>-bpe/)")
    c.add_argument("--bpe-vocab", type=arg_type(Int(257, 10**6)), default=None, help="BPE vocabulary (default 4096)")
    c.add_argument("--figure", default=None,
                   help="default figures/transformer_ppl_ratio.png for the cpu preset, else inside the run's directory")
    c.set_defaults(func=_guard(cmd_compare))

    s = sub.add_parser("lr-sweep", help="the learned tables' lr multiplier: sweep and the in-distribution rule (cpu)")
    s.add_argument("--preset", default="cpu", type=arg_type(Choice("cpu", "cpu-long")),
                   help="the preset whose budget the rule is run at (default cpu)")
    s.add_argument("--variants", default=None, type=arg_type(Choices("learned-qk", "learned-qkv"), keep_text=True),
                   help="comma-separated (default learned-qk,learned-qkv; the rule reads learned-qk)")
    s.add_argument("--mults", default=None, type=arg_type(FloatList(0, 1e6, lo_open=True), keep_text=True), help="comma-separated multipliers (default 1,3,10,30)")
    s.add_argument("--threads", type=arg_type(Int(1, 256)), default=None, help="torch CPU threads")
    s.add_argument("--workers", type=arg_type(Int(1, 64)), default=1, help="runs at once, one torch thread each (default 1)")
    s.set_defaults(func=_guard(cmd_lr_sweep))

    s = sub.add_parser("recall", help="multi-query associative recall: accuracy vs key-query distance per variant (cpu)")
    s.add_argument("--variants", default=None, type=arg_type(Choices(*VARIANTS), keep_text=True),
                   help="comma-separated (default: the C6 main variants, ALiBi and FoX)")
    s.add_argument("--seeds", default=[0, 1, 2], type=arg_type(IntList(0, 2**31 - 1)), help="seeds (default 0,1,2)")
    s.add_argument("--n-seqs", type=arg_type(Int(4, 100_000)), default=64, help="sequences per evaluation cell (default 64)")
    s.set_defaults(func=_guard(cmd_recall))

    s = sub.add_parser("recall-forecast", help="forecast each recall checkpoint's horizon from its own step law (cpu)")
    s.add_argument("--variants", default=None, type=arg_type(Choices(*VARIANTS), keep_text=True),
                   help="comma-separated (default: those of `recall`)")
    s.add_argument("--seeds", default=[0, 1, 2], type=arg_type(IntList(0, 2**31 - 1)), help="seeds (default 0,1,2)")
    s.add_argument("--trials", type=arg_type(Int(16, 100_000)), default=256,
                   help="stylized contexts per distance (default 256)")
    s.set_defaults(func=_guard(cmd_recall_forecast))

    from .chi_markov import cmd_chi_markov

    s = sub.add_parser("chi-markov", help="unigram or Markov chi_b: which forecasts a learned table's decorrelation (cpu)")
    s.set_defaults(func=_guard(cmd_chi_markov))

    from .route_length import cmd_route_length

    s = sub.add_parser("route-length", help="the ratio against the share of each variant's planes mixed (trains "
                       "missing learned checkpoints: ~2 min each at cpu, ~13 at cpu-long)")
    s.add_argument("--preset", default="cpu", type=arg_type(Choice("cpu", "cpu-long")),
                   help="cpu (default: canonical files) or cpu-long (under results/transformer/runs/cpu-long/)")
    s.add_argument("--no-train", action="store_true",
                   help="use the learned checkpoints on disk only; seeds without one are listed and left out")
    s.set_defaults(func=_guard(cmd_route_length))

    s = sub.add_parser("author-ab", help="the author's model points the cpu preset keeps out: A/B on learned-qk, 3 seeds (cpu)")
    s.add_argument("--workers", type=arg_type(Int(1, 64)), default=1, help="runs at once, one torch thread each (default 1)")
    s.set_defaults(func=_guard(cmd_author_ab))

    s = sub.add_parser("lr-robustness", help="learned-qk > learned-qkv per table lr multiplier (x1..x30), 3 seeds each (cpu)")
    s.add_argument("--workers", type=arg_type(Int(1, 64)), default=1, help="runs at once, one torch thread each (default 1)")
    s.add_argument("--no-train", action="store_true", help="only read evaluation caches; refuse if any is missing")
    s.set_defaults(func=_guard(cmd_lr_robustness))

    for name, fn, text in (("far-context", cmd_far_context, "loss with the full context vs the last L_train tokens"),
                           ("passkey", cmd_passkey, "train with passkey sequences mixed in; retrieval accuracy by length, depth")):
        r = sub.add_parser(name, help=text + " (train missing, evaluate, write json/csv/png)")
        r.add_argument("--preset", default="cpu", type=arg_type(Choice(*PRESET_NAMES)),
                       help="default cpu (canonical files); others write under results/transformer/runs/<preset>/")
        r.add_argument("--variants", default=None, type=arg_type(Choices(*VARIANTS), keep_text=True),
                       help=f"comma-separated (default {','.join(MAIN_VARIANTS)})")
        r.add_argument("--workers", type=arg_type(Int(1, 64)), default=1, help="jobs at once, one torch thread each")
        r.add_argument("--threads", type=arg_type(Int(1, 256)), default=1, help="torch CPU threads (workers=1)")
        r.add_argument("--results-dir", default=None, help="default simulations/results/transformer")
        if name == "passkey":
            r.add_argument("--trials", type=arg_type(Int(1, 10_000)), default=None,
                           help="trials per (length, depth) cell (default: the preset's)")
            r.add_argument("--fraction", type=arg_type(Float(0, 1, lo_open=True, hi_open=True)), default=None,
                           help="share of training sequences that are passkey sequences, in (0, 1) (default 0.25)")
        r.set_defaults(func=_guard(fn))

    from .bridge import add_parsers as add_bridge_parsers
    from .long_eval import add_parser as add_long_eval_parser

    add_bridge_parsers(sub, _guard)  # bridge, combined, probe (the bridge never imports this module)
    add_long_eval_parser(sub, _guard)
    from .value_probe_run import add_parser as add_value_probe_parser

    add_value_probe_parser(sub, _guard)
    remember_defaults(sub)  # every sub-command's defaults: a run that differs writes under exploratory/
    return p


def main(argv: list[str] | None = None) -> int:
    from stylized.core.options import OptionParser as _Parser  # one-line usage errors (exit 2)

    parser = _Parser(prog="python -m simulations.transformer")
    sub = parser.add_subparsers(dest="cmd")
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "transformer":
        argv = ["transformer", *argv]
    args = parser.parse_args(argv)
    return args.func(args)
