"""The bridge between the stylized model and trained transformers: commands and the public names.

* ``stylized transformer bridge --preset cpu``: :func:`.bridge_run.run_bridge` — predict every
  checkpoint's far mass ρ_D(L) from measurements at ``L ≤ L_train`` only (:mod:`.bridge_predict`),
  compare with the measured ρ_D(L) at every length, map predicted far mass to
  ``PPL(L)/PPL(L_train)`` leave-one-variant-out (:mod:`.bridge_ppl`), and tabulate the far-mass
  controls (:mod:`.bridge_combined`); writes ``bridge_<preset>.{json,csv}`` and
  ``figures/transformer_bridge.png`` (:mod:`.bridge_plot`).  Exit 1 when the bridge does not hold.
* ``stylized transformer combined --preset cpu``: train and evaluate the far-mass controls
  (ALiBi, FoX, ssmax, each alone and with learned Q/K/V rotations) for seeds 0, 1, 2 with
  :func:`.compare.compare` (``<preset>_combined_seeds.{json,csv}``).
* ``stylized transformer probe CHECKPOINT``: λ, ρ_D(L), χ_b per layer and head (:mod:`.probe`).

The command line of this module is registered by :mod:`.cli` (which imports it; it never imports
:mod:`.cli`).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable

from stylized.core.options import Choice, Choices, Int, IntList, arg_type

from .bridge_combined import CONTROLS, combined_table
from .bridge_plot import plot_bridge
from .bridge_report import bridge_markdown, summary_text
from .bridge_run import output_root, run_bridge
from .canonical import remember_defaults
from .cli_guard import guard as cli_guard
from .probe import DEFAULT_MULTIPLES, probe_checkpoint
from .train import PRESETS

__all__ = ["CONTROLS", "add_parsers", "bridge_markdown", "combined_table", "main", "plot_bridge", "run_bridge",
           "summary_text"]


_root = output_root  # results folder of a preset's bridge run


#: every sub-command's numeric and choice options (argparse ``type=``: one line naming the option, exit 2)
PRESET = arg_type(Choice(*PRESETS))
THREADS = arg_type(Int(1, 256))
SEED = arg_type(Int(0, 2**32 - 1))


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"  # no query has a far source at this length (L ≤ D)
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
                  + "  ρ_D=" + " ".join(_fmt(x) for x in st["rho"]))
    return 0


def cmd_bridge(args: argparse.Namespace) -> int:
    res = run_bridge(args.preset, results_dir=args.results_dir, figure=args.figure, reuse=not args.no_cache)
    for r in res["lovo"]["rows"]:
        errs = " ".join(f"{m}×:{100 * r['err'][str(m)]:+.0f}%" for m in res["verdict"]["multiples"]
                        if str(m) in r["err"])
        print(f"  {r['variant']:>18} (seeds {','.join(map(str, r['seeds']))}): {errs}")
    print(res["summary"])
    print("wrote " + ", ".join(res["files"].values()))
    return 0 if res["holds"] else 1


def cmd_combined(args: argparse.Namespace) -> int:
    from .canonical import split_roots
    from .compare import compare

    variants = list(dict.fromkeys(args.variants))
    seeds = sorted(set(args.seeds))
    results_dir, out_root = split_roots("combined", args, ("variants", "seeds"), preset=args.preset)
    res = compare(args.preset, variants, seeds=seeds, extra_seeds=seeds, steps=args.steps,
                  results_dir=results_dir, workers=args.workers, name="combined_seeds", out_root=out_root)
    print(f"wrote {res['files']['json']}, {res['files']['csv']} in {res['seconds']:.0f}s")
    return 0


def add_parsers(sub: argparse._SubParsersAction, guard: Callable | None = None) -> None:
    """Add ``bridge``, ``combined`` and ``probe`` to the ``stylized transformer`` sub-parsers."""
    guard = guard or cli_guard
    presets = ", ".join(PRESETS)
    b = sub.add_parser("bridge", help="predict far mass from L ≤ L_train, map to perplexity (bridge_<preset>.json)")
    b.add_argument("--preset", default="cpu", type=PRESET, help=f"one of {presets} (default cpu)")
    b.add_argument("--results-dir", default=None)
    b.add_argument("--figure", default=None, help="default figures/transformer_bridge.png (cpu preset)")
    b.add_argument("--no-cache", action="store_true", help="recompute predictions and measurements")
    b.add_argument("--threads", type=THREADS, default=1, help="torch CPU threads, in [1, 256] (default 1)")
    b.set_defaults(func=guard(cmd_bridge))

    c = sub.add_parser("combined", help="train+evaluate the far-mass controls " + ", ".join(CONTROLS))
    c.add_argument("--preset", default="cpu", type=PRESET, help=f"one of {presets} (default cpu)")
    c.add_argument("--variants", default=list(CONTROLS), type=arg_type(Choices(*CONTROLS)),
                   help="comma-separated subset of the default")
    c.add_argument("--seeds", default=[0, 1, 2], type=arg_type(IntList(0, 2**32 - 1)),
                   help="comma-separated integers ≥ 0 (default 0,1,2)")
    c.add_argument("--workers", type=arg_type(Int(1, 64)), default=1, help="jobs at once, one torch thread each")
    c.add_argument("--steps", type=arg_type(Int(1, 10**7)), default=None)
    c.add_argument("--threads", type=THREADS, default=None, help="torch CPU threads")
    c.add_argument("--results-dir", default=None)
    c.set_defaults(func=guard(cmd_combined))

    p = sub.add_parser("probe", help="λ, ρ_D(L), χ_b per layer/head of a checkpoint")
    p.add_argument("checkpoint")
    p.add_argument("--lengths", default=list(DEFAULT_MULTIPLES), type=arg_type(IntList(1, 4096)),
                   help="comma-separated multiples of the training length (default 1,4,16,64)")
    p.add_argument("--D", type=arg_type(Int(1, 10**7)), default=None,
                   help="near/far threshold, below the longest probed length (default: training length)")
    p.add_argument("--windows", type=arg_type(Int(1, 1000)), default=2, help="held-out windows per length")
    p.add_argument("--queries", type=arg_type(Int(1, 100_000)), default=32, help="query positions per window for ρ_D")
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--threads", type=THREADS, default=None, help="torch CPU threads")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.set_defaults(func=guard(cmd_probe))


def main(argv: list[str] | None = None) -> int:
    from stylized.cli.app import _Parser  # one-line usage errors, as under ``stylized transformer``

    parser = _Parser(prog="python -m simulations.transformer.bridge")
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    add_parsers(sub)
    remember_defaults(sub)  # a subset run writes under exploratory/ (:mod:`.canonical`), as under ``stylized``
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
