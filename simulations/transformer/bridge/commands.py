"""The bridge's sub-commands of ``stylized transformer``: ``bridge``, ``combined`` and ``chi-markov``.

* ``stylized transformer bridge --preset cpu``: :func:`.run.run_bridge` — predict every
  checkpoint's far mass ρ_D(L) from measurements at ``L ≤ L_train`` only (:mod:`.predict`),
  compare with the measured ρ_D(L) at every length, map predicted far mass to
  ``PPL(L)/PPL(L_train)`` leave-one-variant-out (:mod:`.ppl`), and tabulate the far-mass
  controls (:mod:`.combined`); writes ``bridge_<preset>.{json,csv}`` and
  ``figures/transformer_bridge.png`` (:mod:`.plot`).  Exit 1 when the bridge does not hold.
* ``stylized transformer combined --preset cpu``: train and evaluate the far-mass controls
  (ALiBi, FoX, ssmax, each alone and with learned Q/K/V rotations) for seeds 0, 1, 2 with
  :func:`..c6.compare.compare` (``<preset>_combined_seeds.{json,csv}``).
* ``stylized transformer chi-markov``: unigram or Markov χ_b as the forecast of each learned table's
  decorrelation (:mod:`.chi_markov`).
"""

from __future__ import annotations

import argparse

from stylized.core.options import Choice, Choices, Int, IntList, arg_type

from ..model.presets import PRESETS
from ..paths import split_roots
from .chi_markov import cmd_chi_markov
from .combined import CONTROLS
from .run import run_bridge

__all__ = ["add_commands", "cmd_bridge", "cmd_combined"]


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
    from ..c6.compare import compare

    variants = list(dict.fromkeys(args.variants))
    seeds = sorted(set(args.seeds))
    results_dir, out_root = split_roots("combined", args, ("variants", "seeds"), preset=args.preset)
    res = compare(args.preset, variants, seeds=seeds, extra_seeds=seeds, steps=args.steps,
                  results_dir=results_dir, workers=args.workers, name="combined_seeds", out_root=out_root)
    print(f"wrote {res['files']['json']}, {res['files']['csv']} in {res['seconds']:.0f}s")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``bridge``, ``combined`` and ``chi-markov`` to the ``stylized transformer`` sub-parsers."""
    presets = ", ".join(PRESETS)
    preset = arg_type(Choice(*PRESETS))
    threads = arg_type(Int(1, 256))
    b = sub.add_parser("bridge", help="predict far mass from L ≤ L_train, map to perplexity (bridge_<preset>.json)")
    b.add_argument("--preset", default="cpu", type=preset, help=f"one of {presets} (default cpu)")
    b.add_argument("--results-dir", default=None)
    b.add_argument("--figure", default=None, help="default figures/transformer_bridge.png (cpu preset)")
    b.add_argument("--no-cache", action="store_true", help="recompute predictions and measurements")
    b.add_argument("--threads", type=threads, default=1, help="torch CPU threads, in [1, 256] (default 1)")
    b.set_defaults(func=cmd_bridge)

    c = sub.add_parser("combined", help="train+evaluate the far-mass controls " + ", ".join(CONTROLS))
    c.add_argument("--preset", default="cpu", type=preset, help=f"one of {presets} (default cpu)")
    c.add_argument("--variants", default=list(CONTROLS), type=arg_type(Choices(*CONTROLS)),
                   help="comma-separated subset of the default")
    c.add_argument("--seeds", default=[0, 1, 2], type=arg_type(IntList(0, 2**32 - 1)),
                   help="comma-separated integers ≥ 0 (default 0,1,2)")
    c.add_argument("--workers", type=arg_type(Int(1, 64)), default=1, help="jobs at once, one torch thread each")
    c.add_argument("--steps", type=arg_type(Int(1, 10**7)), default=None)
    c.add_argument("--threads", type=threads, default=None, help="torch CPU threads")
    c.add_argument("--results-dir", default=None)
    c.set_defaults(func=cmd_combined)

    s = sub.add_parser("chi-markov", help="unigram or Markov chi_b: which forecasts a learned table's decorrelation (cpu)")
    s.set_defaults(func=cmd_chi_markov)
