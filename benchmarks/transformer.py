"""Transformer benchmark (needs torch): training-step time of each variant relative to RoPE, and long-context eval cost.

``python -m benchmarks.transformer [--preset cpu] [--reps 7] [--eval-len 16384]``

* Step time: all variants share the preset's model config and one batch; the
  repetitions are interleaved round-robin (rope, nope, ..., rope, nope, ...)
  so background load hits every variant alike; each repetition times
  ``--steps`` optimizer steps; reported: median seconds per step and the ratio
  to RoPE's median.  ``--naive`` adds ``<variant>:naive`` entries for the rotation
  variants: the same model through the naive reference rotation (``model.rotate``)
  instead of the closed-form autograd Function (``rotation.py``), interleaved with the
  rest.  ``--clock cpu`` times process CPU time instead of wall time (steadier on a shared
  machine with ``--threads 1``).
* Eval: one forward pass (no grad) at ``--eval-len`` tokens for the cheap
  variants (all but ``path``), each in a fresh subprocess; reported: wall time
  and peak resident memory (Linux VmHWM, reset before the pass via
  /proc/self/clear_refs, and the growth over the pre-pass RSS).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from simulations.transformer.model import rotation
from simulations.transformer.model.config import MAIN_VARIANTS, VARIANT_SPECS
from simulations.transformer.model.gpt import GPT
from simulations.transformer.model.presets import Preset
from simulations.transformer.paths import results_root

CHEAP = tuple(v for v in MAIN_VARIANTS if v != "path")


def _mem_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def step_times(preset: str, variants: list[str], reps: int, steps: int,
               clock: str = "wall") -> dict[str, list[float]]:
    """Seconds per training step, ``reps`` interleaved repetitions per variant.

    A variant named ``"<variant>:naive"`` runs through the naive reference rotation.
    """
    timer = time.process_time if clock == "cpu" else time.perf_counter
    models, opts = {}, {}
    for v in variants:
        config = Preset.from_name(preset, variant=v.split(":")[0])
        mcfg, tcfg = config.model, config.train
        torch.manual_seed(0)
        models[v] = GPT(mcfg)
        models[v].train()
        opts[v] = torch.optim.AdamW(models[v].param_groups(0.1, tcfg.lr), lr=tcfg.lr)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, mcfg.vocab_size, (tcfg.batch_size, mcfg.block_size + 1), generator=g)
    inp, tgt = x[:, :-1], x[:, 1:]

    def run(v: str, n: int) -> float:
        fast = rotation.USE_FAST
        rotation.USE_FAST = fast and not v.endswith(":naive")
        try:
            t = timer()
            for _ in range(n):
                _, loss = models[v](inp, tgt)
                opts[v].zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(models[v].parameters(), 1.0)
                opts[v].step()
            return (timer() - t) / n
        finally:
            rotation.USE_FAST = fast

    for v in variants:  # warm-up
        run(v, 2)
    times: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(reps):
        for v in variants:
            times[v].append(run(v, steps))
    return times


def eval_one(preset: str, variant: str, length: int) -> dict:
    """One no-grad forward pass at ``length`` tokens (run inside a fresh process)."""
    mcfg = Preset.from_name(preset, variant=variant).model
    torch.manual_seed(0)
    model = GPT(mcfg).eval()
    x = torch.randint(0, mcfg.vocab_size, (1, length))
    with torch.no_grad():
        model(x[:, :256])  # warm-up
        rss0 = _mem_kb("VmRSS")
        try:
            Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM
        except OSError:
            pass
        t = time.perf_counter()
        logits, _ = model(x)
        sec = time.perf_counter() - t
    peak = _mem_kb("VmHWM")
    return {"variant": variant, "length": length, "seconds": sec,
            "peak_rss_mb": peak / 1024, "peak_growth_mb": (peak - rss0) / 1024}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.transformer")
    ap.add_argument("--preset", default="cpu")
    ap.add_argument("--variants", default=",".join(MAIN_VARIANTS))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=3, help="steps per repetition")
    ap.add_argument("--eval-len", type=int, default=16384)
    ap.add_argument("--no-eval", action="store_true")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--naive", action="store_true",
                    help="also time the rotation variants through the naive reference rotation")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="wall or process CPU time")
    ap.add_argument("--out", default=None, help="JSON output (default results/transformer/bench_<preset>.json)")
    ap.add_argument("--_eval-child", dest="eval_child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.eval_child:
        print(json.dumps(eval_one(args.preset, args.eval_child, args.eval_len)))
        return 0
    variants = [v.strip() for v in args.variants.split(",")]
    if "rope" not in variants:
        variants.insert(0, "rope")
    if args.naive:
        variants += [f"{v}:naive" for v in list(variants) if VARIANT_SPECS[v].angle_source is not None]
    print(f"[bench] preset={args.preset} threads={torch.get_num_threads()} reps={args.reps} "
          f"x {args.steps} steps, {args.clock} clock", flush=True)
    times = step_times(args.preset, variants, args.reps, args.steps, args.clock)
    base = statistics.median(times["rope"])
    steps_out = []
    print(f"{'variant':<20}{'median s/step':>14}{'ratio vs rope':>15}")
    for v in variants:
        med = statistics.median(times[v])
        steps_out.append({"variant": v, "median_s_per_step": med, "ratio_vs_rope": med / base,
                          "reps": times[v], "clock": args.clock})
        print(f"{v:<20}{med:>14.4f}{med / base:>15.3f}", flush=True)
    variants = [v for v in variants if not v.endswith(":naive")]
    evals = []
    if not args.no_eval:
        print(f"\n[bench] eval forward at {args.eval_len} tokens (batch 1, no grad)")
        print(f"{'variant':<18}{'seconds':>9}{'peak RSS MB':>13}{'growth MB':>11}")
        for v in [v for v in variants if v in CHEAP]:
            r = subprocess.run(
                [sys.executable, "-m", "benchmarks.transformer", "--preset", args.preset,
                 "--eval-len", str(args.eval_len), "--_eval-child", v]
                + (["--threads", str(args.threads)] if args.threads else []),
                capture_output=True, text=True, check=True,
            )
            d = json.loads(r.stdout.strip().splitlines()[-1])
            evals.append(d)
            print(f"{v:<18}{d['seconds']:>9.2f}{d['peak_rss_mb']:>13.0f}"
                  f"{d['peak_growth_mb']:>11.0f}", flush=True)
    out = Path(args.out) if args.out else results_root() / f"bench_{args.preset}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"preset": args.preset, "step": steps_out, "eval": evals}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
