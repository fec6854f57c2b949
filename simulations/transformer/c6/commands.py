"""The C6 study's sub-commands of ``stylized transformer``: ``compare`` (train, evaluate, decide), ``lr-sweep``,
``route-length``, ``author-ab`` and ``lr-robustness``."""

from __future__ import annotations

import argparse

from stylized.core.errors import InvalidInput
from stylized.core.options import Choice, Choices, FloatList, Int, IntList, arg_type

from ..model.config import MAIN_VARIANTS, VARIANTS
from ..options import PRESET_NAMES, TOKENIZER, add_run_options, check_choice, seed_list
from ..paths import destination, results_root, split_roots
from ..train.checkpoints import check_dir
from .route_length import cmd_route_length

__all__ = ["add_commands", "cmd_author_ab", "cmd_compare", "cmd_lr_robustness", "cmd_lr_sweep"]


def cmd_compare(args: argparse.Namespace) -> int:
    from .compare import compare

    check_choice("preset", args.preset, PRESET_NAMES)
    variants = [v.strip() for v in args.variants.split(",")] if args.variants else None
    for v in variants or []:
        check_choice("variants", v, VARIANTS)
    results_dir, out_root = split_roots("compare", args, ("variants", "seeds", "extra_seeds"),
                                        preset=args.preset + ("-bpe" if args.tokenizer == "bpe" else ""))
    res = compare(args.preset, variants, seeds=seed_list("--seeds", args.seeds),
                  extra_seeds=seed_list("--extra-seeds", args.extra_seeds), steps=args.steps, data=args.data,
                  results_dir=results_dir, figure=args.figure, workers=args.workers,
                  tokenizer=args.tokenizer, bpe_vocab=args.bpe_vocab, out_root=out_root)
    for r in res["verdicts"]["all"]["rows"]:
        print(f"  {r['row']}: {r['verdict']}")
    print(f"holds={res['holds']} (C6 holds when no paper row contradicts; author's metric at "
          f"{res['verdicts']['all']['multiple']}x)")
    print(f"wrote {res['files']['csv']}, {res['files']['json']}, {res['files']['figure']} "
          f"in {res['seconds']:.0f}s")
    return 0


def cmd_author_ab(args: argparse.Namespace) -> int:
    """Each of the author's model points the cpu preset does not take, A/B on learned-qk at 3 seeds."""
    from ..train.jobs import map_jobs
    from .author_ab import ab_table, missing, run_one, summary_lines, trains, write_ab

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

    from .lr_robustness import missing_runs, robustness, summary_lines, train_missing, write_robustness

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
    from ..model.presets import Preset
    from .lr_sweep import MULTS, SWEEP_VARIANTS, run_sweep, write_sweep

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
    uses = Preset.from_name(args.preset).model.angle_lr_mult
    print(f"chosen x{res['chosen']} (the {args.preset} preset uses x{uses:g})" + (f"; wrote {path}" if path else ""))
    return 0 if res["chosen"] == uses else 1


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``compare``, ``lr-sweep``, ``route-length``, ``author-ab`` and ``lr-robustness`` to the
    ``stylized transformer`` sub-parsers."""
    c = sub.add_parser("compare", help="train missing variants, evaluate all, write csv/json/png")
    add_run_options(c)
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
    c.set_defaults(func=cmd_compare)

    s = sub.add_parser("lr-sweep", help="the learned tables' lr multiplier: sweep and the in-distribution rule (cpu)")
    s.add_argument("--preset", default="cpu", type=arg_type(Choice("cpu", "cpu-long")),
                   help="the preset whose budget the rule is run at (default cpu)")
    s.add_argument("--variants", default=None, type=arg_type(Choices("learned-qk", "learned-qkv"), keep_text=True),
                   help="comma-separated (default learned-qk,learned-qkv; the rule reads learned-qk)")
    s.add_argument("--mults", default=None, type=arg_type(FloatList(0, 1e6, lo_open=True), keep_text=True), help="comma-separated multipliers (default 1,3,10,30)")
    s.add_argument("--threads", type=arg_type(Int(1, 256)), default=None, help="torch CPU threads")
    s.add_argument("--workers", type=arg_type(Int(1, 64)), default=1, help="runs at once, one torch thread each (default 1)")
    s.set_defaults(func=cmd_lr_sweep)

    s = sub.add_parser("route-length", help="the ratio against the share of each variant's planes mixed (trains "
                       "missing learned checkpoints: ~2 min each at cpu, ~13 at cpu-long)")
    s.add_argument("--preset", default="cpu", type=arg_type(Choice("cpu", "cpu-long")),
                   help="cpu (default: canonical files) or cpu-long (under results/transformer/runs/cpu-long/)")
    s.add_argument("--no-train", action="store_true",
                   help="use the learned checkpoints on disk only; seeds without one are listed and left out")
    s.set_defaults(func=cmd_route_length)

    s = sub.add_parser("author-ab", help="the author's model points the cpu preset keeps out: A/B on learned-qk, 3 seeds (cpu)")
    s.add_argument("--workers", type=arg_type(Int(1, 64)), default=1, help="runs at once, one torch thread each (default 1)")
    s.set_defaults(func=cmd_author_ab)

    s = sub.add_parser("lr-robustness", help="learned-qk > learned-qkv per table lr multiplier (x1..x30), 3 seeds each (cpu)")
    s.add_argument("--workers", type=arg_type(Int(1, 64)), default=1, help="runs at once, one torch thread each (default 1)")
    s.add_argument("--no-train", action="store_true", help="only read evaluation caches; refuse if any is missing")
    s.set_defaults(func=cmd_lr_robustness)
