"""Reproduction spot-check: retrain one committed C6 run into a scratch folder and compare.

``stylized spot-check`` (``python -m simulations.transformer.c6.spot_check``) retrains
``rope``, seed 0, cpu preset (about 70 s on one thread), then compares it with what is committed:

* the weights digest (:func:`.evaluate.weights_digest`) against the one recorded in the committed
  evaluation cache (``eval/cpu/rope.json``): equal means the run reproduced bit for bit, and the
  committed per-window losses are then reused;
* PPL(L) at every evaluated multiple (1×…128×, both metrics) against the committed
  ``cpu_compare.json`` rows of that run: equal to ``rtol`` when the weights are equal; otherwise the
  new checkpoint is evaluated and its PPL(L)/PPL(L_train) (the author's metric) must lie inside the
  committed 95% interval at every multiple ("reproduced within its interval").

Exit 0 when it reproduces, 1 when it does not, 2 when the committed numbers are missing.
Nothing is written outside the scratch folder (a temporary one unless ``--scratch`` is given).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from pathlib import Path

from stylized.core.errors import InvalidInput
from stylized.core.options import Choice, Int, arg_type
from stylized.harness.results import Stopwatch

from ..evaluate.extrapolation import eval_cache_path, evaluate_checkpoint, weights_digest
from ..model.config import VARIANTS
from ..model.presets import PRESETS, Preset
from ..paths import checkpoint_path, results_root
from ..train.checkpoints import check_dir
from ..train.loop import load_model, train

__all__ = ["spot_check", "add_parser", "main"]


def _committed(preset: str, variant: str, seed: int) -> tuple[dict, dict[int, dict]]:
    """The committed evaluation-cache key and the committed per-multiple rows of (variant, seed)."""
    cache = eval_cache_path(checkpoint_path(preset, variant, seed))
    compare = results_root() / f"{preset}_compare.json"
    if not compare.exists():
        raise InvalidInput(f"--preset {preset}: no committed {preset} run to compare with ({compare} is missing)")
    if not cache.exists():  # each option valid alone; together they name a run that was not committed
        raise InvalidInput(f"--variant {variant} with --seed {seed} (--preset {preset}): no committed run to compare "
                           f"with ({cache} is missing)")
    try:
        key = json.loads(cache.read_text(encoding="utf-8"))["key"]
        rows = {int(r["multiple"]): r for r in json.loads(compare.read_text(encoding="utf-8"))["per_seed"]
                if r["variant"] == variant and int(r.get("seed", 0)) == seed}
        if not isinstance(key, dict) or not isinstance(key.get("weights"), str):
            raise TypeError("no weights digest in its key")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"committed results {cache} / {compare} are unusable ({type(e).__name__}: "
                         f"{str(e).splitlines()[0][:80] if str(e) else ''})") from None
    if not rows:
        raise InvalidInput(f"--variant {variant} with --seed {seed}: {compare} has no rows for this run")
    return key, rows


def spot_check(variant: str = "rope", seed: int = 0, preset: str = "cpu", scratch: str | Path | None = None,
               rtol: float = 1e-9, progress: bool = True) -> dict:
    """Retrain ``variant``/``seed`` under ``preset`` into ``scratch`` and compare it with the committed run.

    Returns a dict: ``reproduced`` (bool), ``how`` (``"bit for bit"``, ``"within its interval"`` or
    ``"no"``), ``digest`` and ``committed_digest``, ``rows`` (per multiple: committed and new PPL in
    both metrics, the new ratio and the committed interval), ``seconds``.
    """
    if not (isinstance(rtol, float) and 0 <= rtol < 1):
        raise ValueError(f"rtol must be a number in [0, 1), got {rtol!r}")
    key, committed = _committed(preset, variant, seed)
    clock = Stopwatch()
    scratch = Path(scratch) if scratch else Path(tempfile.mkdtemp(prefix="stylized-spot-check-"))
    info = train(Preset.from_name(preset, variant=variant, seed=seed), results_dir=scratch, progress=progress)
    ckpt = Path(info["checkpoint"])
    model, _ = load_model(ckpt)
    digest = weights_digest(model)
    same = digest == key["weights"]
    if same:  # identical weights: the committed per-window losses are this checkpoint's
        cache = eval_cache_path(ckpt)
        cache.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(eval_cache_path(checkpoint_path(preset, variant, seed)), cache)
    ecfg = Preset.from_name(preset, variant=variant).eval
    rows = []
    for r in evaluate_checkpoint(ckpt, ecfg, seed=seed, progress=progress):
        c = committed.get(int(r["multiple"]))
        if c is None:
            continue
        close = all(math.isclose(r[k], c[k], rel_tol=rtol) for k in ("ppl", "ppl_all"))
        inside = c["ci_low_all"] <= r["ratio_all"] <= c["ci_high_all"]
        rows.append({"multiple": int(r["multiple"]), "ppl": r["ppl"], "ppl_committed": c["ppl"],
                     "ppl_all": r["ppl_all"], "ppl_all_committed": c["ppl_all"], "ratio_all": r["ratio_all"],
                     "ci_low_all_committed": c["ci_low_all"], "ci_high_all_committed": c["ci_high_all"],
                     "equal": close, "inside": inside})
    equal = same and bool(rows) and all(x["equal"] for x in rows)
    inside = bool(rows) and all(x["inside"] for x in rows)
    how = "bit for bit" if equal else "within its interval" if inside else "no"
    return {"variant": variant, "seed": seed, "preset": preset, "reproduced": how != "no", "how": how,
            "digest": digest, "committed_digest": key["weights"], "rows": rows, "scratch": str(scratch),
            "train_seconds": round(info["seconds"], 1), "seconds": round(clock.seconds, 1)}


def _report(res: dict) -> str:
    lines = [f"{'×':>5} {'PPL':>9} {'committed':>9} {'PPL(all)':>9} {'committed':>9} {'ratio':>7} "
             f"{'committed 95% CI':>18}"]
    for x in res["rows"]:
        lines.append(f"{x['multiple']:5d} {x['ppl']:9.4f} {x['ppl_committed']:9.4f} {x['ppl_all']:9.4f} "
                     f"{x['ppl_all_committed']:9.4f} {x['ratio_all']:7.3f} "
                     f"[{x['ci_low_all_committed']:7.3f}, {x['ci_high_all_committed']:7.3f}]")
    verdict = {"bit for bit": "REPRODUCED bit for bit (weights digest and every PPL equal)",
               "within its interval": "REPRODUCED within the committed intervals (weights differ: "
                                      f"{res['digest']} vs {res['committed_digest']})",
               "no": "DOES NOT REPRODUCE"}[res["how"]]
    lines.append(f"spot-check {res['preset']}/{res['variant']} seed {res['seed']}: {verdict} "
                 f"({res['seconds']:.0f} s; scratch {res['scratch']})")
    return "\n".join(lines)


def _cmd(args: argparse.Namespace) -> int:
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    try:
        if args.scratch:
            check_dir(args.scratch, "--scratch")  # before the retraining
        res = spot_check(args.variant, args.seed, args.preset, args.scratch, progress=not args.quiet)
    except ValueError as e:
        print(f"stylized: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    print(json.dumps(res) if args.json else _report(res).splitlines()[-1] if args.quiet else _report(res))
    if not args.scratch:
        shutil.rmtree(res["scratch"], ignore_errors=True)
    return 0 if res["reproduced"] else 1


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``spot-check`` to ``subparsers`` (the ``stylized.commands`` entry point)."""
    p = subparsers.add_parser("spot-check", help="retrain one committed transformer run (rope, seed 0, cpu) and "
                                                 "compare it with the committed numbers (~2 min)",
                              description=__doc__.split("\n\n")[1])
    p.add_argument("--variant", default="rope", type=arg_type(Choice(*VARIANTS)), help="variant (default rope)")
    p.add_argument("--seed", type=arg_type(Int(0, 2**32 - 1)), default=0, help="seed, in [0, 2^32 - 1] (default 0)")
    p.add_argument("--preset", default="cpu", type=arg_type(Choice(*PRESETS)),
                   help=f"one of {', '.join(PRESETS)} (default cpu)")
    p.add_argument("--scratch", default=None, help="folder to train into (default: a temporary one, removed after)")
    p.add_argument("--threads", type=arg_type(Int(1, 256)), default=1, help="torch CPU threads, in [1, 256] (default 1)")
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar; only the verdict line")
    p.set_defaults(func=_cmd)
    return p


def main(argv: list[str] | None = None) -> int:
    from stylized.core.options import OptionParser  # one-line usage errors (exit 2)

    parser = OptionParser(prog="python -m simulations.transformer.c6.spot_check")
    sub = parser.add_subparsers(dest="cmd", parser_class=OptionParser)
    add_parser(sub)
    return _cmd(parser.parse_args(["spot-check", *(sys.argv[1:] if argv is None else argv)]))


if __name__ == "__main__":
    sys.exit(main())
