"""GPU smoke test of one variant under a preset (``scripts/gpu_check.sh --smoke`` runs all eight at once).

Trains ``--steps`` steps on CUDA exactly as ``simulations.transformer.train.distributed`` does (bf16 autocast, the
preset's batch), times the steps after the first few, then runs one no-grad forward at the preset's longest
evaluation length (``L_train`` × the largest multiple) and reports its time and the peak GPU memory. One JSON line
on stdout; a failure is one line naming the stage, exit 1.

    python scripts/gpu_smoke.py --variant path --preset gpu --steps 40
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

sys.path.insert(0, ".")
from simulations.transformer.data.corpus import load_corpus  # noqa: E402
from simulations.transformer.model.presets import Preset  # noqa: E402
from simulations.transformer.train.distributed import shard_batch  # noqa: E402
from simulations.transformer.train.loop import build_model, train_step  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", required=True)
    ap.add_argument("--preset", default="gpu")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warm", type=int, default=5, help="steps not timed (allocator, autotuning)")
    ap.add_argument("--long-multiple", type=int, default=None, help="the long forward's multiple of L_train "
                    "(default: the preset's largest evaluation multiple)")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu to test the script itself")
    args = ap.parse_args()
    stage = "setup"
    out: dict = {"variant": args.variant, "preset": args.preset}
    try:
        cuda = args.device == "cuda"
        assert torch.cuda.is_available() or not cuda, "CUDA is not available to torch"
        dev = torch.device(args.device)
        sync = torch.cuda.synchronize if cuda else (lambda: None)
        config = Preset.from_name(args.preset, variant=args.variant)
        mcfg, tcfg, ecfg = config.model, config.train, config.eval
        corpus = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
        model, opt = build_model(mcfg, tcfg, dev, cuda)
        stage = "train"
        model.train()
        for step in range(args.steps):
            if step == args.warm:
                sync()
                t0 = time.perf_counter()
            x, y = shard_batch(corpus.train, step, tcfg.batch_size, mcfg.block_size, tcfg.seed, 0, 1, dev)
            _, loss = train_step(model, model, opt, tcfg, step, x, y, cuda)
        sync()
        per_step = (time.perf_counter() - t0) / max(1, args.steps - args.warm)
        out.update(ms_per_step=round(per_step * 1e3, 2), loss=round(float(loss.detach()), 4),
                   steps_in_360s=int(360 / per_step), preset_steps=tcfg.steps)
        stage = "long forward"
        L = mcfg.block_size * (args.long_multiple or max(ecfg.multiples))
        model.eval()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        xs = torch.from_numpy(corpus.val[:L].astype("int64")).view(1, -1).to(dev)
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda):
            sync()
            t0 = time.perf_counter()
            logits, _ = model(xs)
            sync()
        out.update(long_L=L, long_forward_s=round(time.perf_counter() - t0, 2),
                   long_peak_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
                   long_logits_finite=bool(torch.isfinite(logits.float()).all()))
    except Exception as e:  # the smoke reports, it does not crash: one line per variant
        out.update(failed=stage, error=f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
        print(json.dumps(out), flush=True)
        return 1
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
