"""The recall sub-commands of ``stylized transformer``: ``recall`` (multi-query associative recall by key → query
distance) and ``recall-forecast`` (each checkpoint's horizon forecast from its own step law)."""

from __future__ import annotations

import argparse

from stylized.core.errors import InvalidInput
from stylized.core.options import Choices, Int, IntList, arg_type

from ..model.config import VARIANTS
from ..paths import destination, results_root
from ..train.checkpoints import check_dir

__all__ = ["add_commands", "cmd_recall", "cmd_recall_forecast"]


def cmd_recall(args: argparse.Namespace) -> int:
    """Multi-query associative recall: train every variant at every seed (resuming), then the table and figure."""
    from .report import plot_recall, summary_lines
    from .sweep import VARIANTS_RECALL, load_results, run_sweep, write_results

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
    from ..train.readers import read_json
    from .forecast_report import plot_forecast, plot_skill
    from .forecast_run import run_forecasts
    from .sweep import VARIANTS_RECALL

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


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``recall`` and ``recall-forecast`` to the ``stylized transformer`` sub-parsers."""
    s = sub.add_parser("recall", help="multi-query associative recall: accuracy vs key-query distance per variant (cpu)")
    s.add_argument("--variants", default=None, type=arg_type(Choices(*VARIANTS), keep_text=True),
                   help="comma-separated (default: the C6 main variants, ALiBi and FoX)")
    s.add_argument("--seeds", default=[0, 1, 2], type=arg_type(IntList(0, 2**31 - 1)), help="seeds (default 0,1,2)")
    s.add_argument("--n-seqs", type=arg_type(Int(4, 100_000)), default=64, help="sequences per evaluation cell (default 64)")
    s.set_defaults(func=cmd_recall)

    s = sub.add_parser("recall-forecast", help="forecast each recall checkpoint's horizon from its own step law (cpu)")
    s.add_argument("--variants", default=None, type=arg_type(Choices(*VARIANTS), keep_text=True),
                   help="comma-separated (default: those of `recall`)")
    s.add_argument("--seeds", default=[0, 1, 2], type=arg_type(IntList(0, 2**31 - 1)), help="seeds (default 0,1,2)")
    s.add_argument("--trials", type=arg_type(Int(16, 100_000)), default=256,
                   help="stylized contexts per distance (default 256)")
    s.set_defaults(func=cmd_recall_forecast)
