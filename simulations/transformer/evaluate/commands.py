"""The evaluation sub-commands of ``stylized transformer``: ``eval`` (perplexity by length), ``far-context``,
``passkey``, ``probe`` (λ, ρ_D(L), χ_b of a checkpoint), ``long-eval`` and ``value-probe``."""

from __future__ import annotations

import argparse
import json
import math

from stylized.core.options import Choice, Choices, Float, Int, IntList, arg_type

from ..model.config import MAIN_VARIANTS, VARIANTS
from ..options import PRESET_NAMES, add_run_options, check_choice, variant_list
from ..paths import checkpoint_path, destination, run_root
from . import value_probe
from .long_eval import cmd_long_eval
from .probe import DEFAULT_MULTIPLES, probe_checkpoint
from .value_probe_run import cmd_value_probe

__all__ = ["add_commands", "cmd_eval", "cmd_far_context", "cmd_passkey", "cmd_probe"]


def cmd_eval(args: argparse.Namespace) -> int:
    from ..model.presets import Preset
    from .extrapolation import evaluate_checkpoint

    check_choice("variant", args.variant, VARIANTS)
    check_choice("preset", args.preset, PRESET_NAMES)
    ecfg = Preset.from_name(args.preset, variant=args.variant).eval
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


def cmd_far_context(args: argparse.Namespace) -> int:
    from .far_context import run_far_context

    check_choice("--preset", args.preset, PRESET_NAMES)
    dest = destination("far-context", args, root=run_root(args.preset, None)[0])  # a subset: all under exploratory/
    res = run_far_context(args.preset, variant_list(args.variants, VARIANTS), workers=args.workers,
                          threads=args.threads, results_dir=None if dest.canonical else dest.root)
    for r in res["rows"]:
        if r["multiple"] in (16, 64) or r["multiple"] == max(res["params"]["multiples"]):
            print(f"  {r['variant']:>12} {r['multiple']:4d}x: far-context ratio {r['ratio']:.3f} "
                  f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] ({r['use']}, {r['seeds']} seed(s))")
    print(f"wrote {res['files']['json']}, {res['files']['csv']}, {res['files']['figure']} in {res['seconds']:.0f}s")
    return 0


def cmd_passkey(args: argparse.Namespace) -> int:
    from .passkey import run_passkey

    check_choice("--preset", args.preset, PRESET_NAMES)
    dest = destination("passkey", args, root=run_root(args.preset, None)[0])  # a subset: all under exploratory/
    res = run_passkey(args.preset, variant_list(args.variants, VARIANTS), workers=args.workers, threads=args.threads,
                      results_dir=None if dest.canonical else dest.root, trials=args.trials, fraction=args.fraction)
    for v, acc in res["summary"].items():
        print(f"  {v:>12}: " + " ".join(f"{m}x {a:.2f}" for m, a in acc.items()))
    print(f"wrote {res['files']['json']}, {res['files']['csv']}, {res['files']['figure']} in {res['seconds']:.0f}s")
    return 0


def probe_value_text(x) -> str:
    """A probed ρ_D as printed: ``n/a`` (no query has a far source at this length, L ≤ D), ``never``, or 3 digits."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return "never" if isinstance(x, float) and math.isinf(x) else f"{x:.3g}"


def cmd_probe(args: argparse.Namespace) -> int:
    res = probe_checkpoint(args.checkpoint, args.lengths, args.D, args.windows, args.queries, args.seed,
                           flag_prefix="--", need_far=True)
    if args.json:
        from stylized.harness.results import to_jsonable

        print(json.dumps(to_jsonable(res)))
        return 0
    print(f"{res['variant']} step {res['step']}: L_train={res['L_train']} D={res['D']} d_h={res['head_dim']}")
    for li, lay in enumerate(res["layers"]):
        chi = lay["chi"]
        if chi:
            print(f" layer {li}: γ={chi['gap']:.4g}  |χ_b| min/max={min(chi['chi_abs']):.3g}/{max(chi['chi_abs']):.3g}")
        for L, st in lay["lengths"].items():
            print(f"  layer {li} L={L:>6}: λ=" + " ".join(f"{x:.2f}" for x in st["lam"])
                  + "  ρ_D=" + " ".join(probe_value_text(x) for x in st["rho"]))
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``eval``, ``far-context``, ``passkey``, ``probe``, ``long-eval`` and ``value-probe`` to the
    ``stylized transformer`` sub-parsers."""
    e = sub.add_parser("eval", help="perplexity at 1x..64x/128x the training length")
    e.add_argument("--variant", required=True, type=arg_type(Choice(*VARIANTS)), help=f"one of {', '.join(VARIANTS)}")
    add_run_options(e)
    e.add_argument("--json", action="store_true", help="also print the rows as JSON")
    e.set_defaults(func=cmd_eval)

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
        r.set_defaults(func=fn)

    threads = arg_type(Int(1, 256))
    p = sub.add_parser("probe", help="λ, ρ_D(L), χ_b per layer/head of a checkpoint")
    p.add_argument("checkpoint")
    p.add_argument("--lengths", default=list(DEFAULT_MULTIPLES), type=arg_type(IntList(1, 4096)),
                   help="comma-separated multiples of the training length (default 1,4,16,64)")
    p.add_argument("--D", type=arg_type(Int(1, 10**7)), default=None,
                   help="near/far threshold, below the longest probed length (default: training length)")
    p.add_argument("--windows", type=arg_type(Int(1, 1000)), default=2, help="held-out windows per length")
    p.add_argument("--queries", type=arg_type(Int(1, 100_000)), default=32, help="query positions per window for ρ_D")
    p.add_argument("--seed", type=arg_type(Int(0, 2**32 - 1)), default=0)
    p.add_argument("--threads", type=threads, default=None, help="torch CPU threads")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.set_defaults(func=cmd_probe)

    s = sub.add_parser("long-eval", help="one seed evaluated past the preset's multiples: cpu-long to 128x = 32,768 "
                       "tokens (~8 min per variant; trains a missing checkpoint, ~13 min)")
    s.add_argument("--preset", default="cpu-long", type=arg_type(Choice("cpu-long")),
                   help="cpu-long (the only one: its comparison stops at 32x); results under "
                   "results/transformer/runs/cpu-long/")
    s.add_argument("--seed", type=arg_type(Int(0, 2**31 - 1)), default=0, help="training seed (default 0)")
    s.add_argument("--variants", default="rope,learned-qk,learned-qkv",
                   type=arg_type(Choices(*VARIANTS), keep_text=True),
                   help="comma-separated (default rope,learned-qk,learned-qkv)")
    s.add_argument("--multiples", default=[1, 2, 4, 8, 16, 32, 64, 128], type=arg_type(IntList(1, 1024)),
                   help="multiples of L_train (default 1,2,4,...,128; 1 is always added)")
    s.add_argument("--threads", type=threads, default=1, help="torch CPU threads (default 1)")
    s.add_argument("--no-train", action="store_true", help="use checkpoints on disk only; list the missing ones")
    s.set_defaults(func=cmd_long_eval)

    s = sub.add_parser("value-probe", help="C5 in the trained cpu checkpoints: far energy of the values per head, "
                       "measured vs the plug-in prediction (retrains a missing checkpoint, ~2-5 min each)")
    s.add_argument("--variants", default=None, help=f"comma-separated subset of {','.join(value_probe.VARIANTS_C5)} (default all)")
    s.add_argument("--seeds", default=[0, 1, 2], type=arg_type(IntList(0, 2**31 - 1)), help="seeds (default 0,1,2)")
    s.add_argument("--lengths", default=list(value_probe.DEFAULT_MULTIPLES), type=arg_type(IntList(1, 128)),
                   help="length multiples of L_train (default 1,4,16,64)")
    s.add_argument("--windows", type=arg_type(Int(2, 256)), default=8, help="held-out windows per length (default 8)")
    s.add_argument("--queries", type=arg_type(Int(1, 256)), default=8, help="query positions per window (default 8)")
    s.add_argument("--D", type=arg_type(Int(1, 8191)), default=None, help="far threshold i − j ≥ D (default L_train/2)")
    s.set_defaults(func=cmd_value_probe)
