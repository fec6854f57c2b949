"""Multi-GPU training with DistributedDataParallel (``torchrun``), same semantics as ``train.train``.

    torchrun --standalone --nproc_per_node=8 -m simulations.transformer.train.distributed \\
        --variant learned-qk --preset paper --data owt:/data/openwebtext [--resume]

(``python -m simulations.transformer.train.distributed ...`` without ``torchrun`` trains in one
process and is then identical to ``train.train``.)  Backend: NCCL on CUDA, Gloo on CPU.

* The global batch (``batch_size`` of the preset) is a pure function of (seed, step) exactly as
  in :func:`~simulations.transformer.train.loop.get_batch`; rank ``r`` of ``W`` takes rows
  ``[r·b, (r+1)·b)``, ``b = batch_size / W`` (which must divide).  Each rank's loss is the mean
  over its rows and DDP averages the gradients, so the update equals the single-process update
  on the global batch (up to float reduction order; with dropout 0 and deterministic angles the
  loss trajectories agree to ~1e-6, ``tests/transformer/train/test_ddp.py``).
* RNG: every rank initialises the model from ``seed`` (DDP also broadcasts rank 0's weights);
  rank 0 then continues the seed's stream (so ``W = 1`` reproduces ``train.train`` bit for bit),
  rank ``r > 0`` reseeds with ``seed + 1_000_003·r`` (its own dropout masks / random angles).
* Checkpoints: rank 0 writes atomically (``train.save_checkpoint``), the same fields as
  ``train.train`` (``load_model`` / evaluation read them unchanged) plus ``world_size`` and every
  rank's RNG states (``rng_ranks``), so a resume with the same ``W`` is exact.
* The corpus (and its BPE / token cache) is built by rank 0 before the others load it; for
  OpenWebText build it once ahead: ``python -m simulations.transformer.data.corpus --data owt:DIR
  --tokenizer bpe --vocab 32768``.
* ``--compile``: ``torch.compile`` the model on CUDA (guarded: falls back to eager on failure).
"""

from __future__ import annotations

import datetime
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from ..data.corpus import Corpus, load_corpus
from ..model.config import GPTConfig
from ..model.presets import Preset
from ..paths import checkpoint_path
from .checkpoints import check_dir, save_checkpoint
from .loop import (
    RunRecord,
    build_model,
    check_corpus,
    progress_bar,
    resume_from,
    rng_state,
    run_steps,
    set_rng_state,
)


def dist_env() -> tuple[int, int, int]:
    """(rank, world size, local rank): from an initialised process group, else torchrun's env."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", dist.get_rank()))
    env = os.environ
    return int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", 0))


def shard_batch(tokens: np.ndarray, step: int, batch_size: int, block: int, seed: int, rank: int,
                world: int, device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Rank ``rank``'s rows of global batch number ``step`` (the rows of ``train.get_batch``)."""
    if batch_size % world:
        raise ValueError(f"batch_size={batch_size} must be divisible by the world size {world}")
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    ix = torch.randint(0, len(tokens) - block - 1, (batch_size,), generator=g).numpy()
    b = batch_size // world
    ix = ix[rank * b: (rank + 1) * b]
    x = np.stack([tokens[i: i + block] for i in ix]).astype(np.int64)
    y = np.stack([tokens[i + 1: i + 1 + block] for i in ix]).astype(np.int64)
    return torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)


def _maybe_compile(model: torch.nn.Module, device: torch.device, enabled: bool) -> torch.nn.Module:
    if not enabled or device.type != "cuda":
        return model
    try:
        return torch.compile(model)
    except Exception as e:  # pragma: no cover - depends on the toolchain
        print(f"[distributed] torch.compile unavailable ({e}); eager", file=sys.stderr)
        return model


def train_ddp(
    config: Preset,
    *,
    resume: bool = False,
    ckpt: str | os.PathLike | None = None,
    results_dir: str | os.PathLike | None = None,
    stop_at: int | None = None,
    corpus: Corpus | None = None,
    progress: bool = True,
    device: str | None = None,
    backend: str | None = None,
    compile: bool = False,
    time_limit: float | None = None,
) -> dict:
    """Train ``config`` (a :class:`Preset`) on every rank of the process group (see module docstring).

    Parameters are those of :func:`~simulations.transformer.train.loop.train`, plus ``backend`` (default NCCL on CUDA, Gloo on CPU;
    used when the group is not initialised yet and ``WORLD_SIZE > 1``), ``compile``, and
    ``time_limit`` (seconds: checkpoint and stop once training has run this long; rank 0 decides).
    Returns ``train.train``'s summary (the history holds the global-batch mean loss).
    """
    rank, world, local = dist_env()
    use_cuda = (device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")
    dev = torch.device(f"cuda:{local}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(dev)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend or ("nccl" if use_cuda else "gloo"), timeout=datetime.timedelta(hours=2))
    mcfg, tcfg = config.model, config.train
    variant, preset, seed = mcfg.variant, config.name, tcfg.seed
    if tcfg.batch_size % world:
        raise ValueError(f"batch_size={tcfg.batch_size} must be divisible by the world size {world}")
    path = Path(ckpt) if ckpt else checkpoint_path(preset, variant, seed, results_dir)
    if corpus is None:
        for r in (0, 1):  # rank 0 builds the caches, then the others read them
            if (rank == 0) == (r == 0):
                corpus = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
            if world > 1:
                dist.barrier()
    check_corpus(corpus, mcfg.block_size)
    if corpus.vocab_size > mcfg.vocab_size:
        mcfg = GPTConfig(**{**mcfg.to_dict(), "vocab_size": corpus.vocab_size})

    model, opt = build_model(mcfg, tcfg, dev, use_cuda)
    if rank > 0:
        torch.manual_seed(tcfg.seed + 1_000_003 * rank)
        np.random.seed((tcfg.seed + 1_000_003 * rank) % 2**32)
        random.seed(tcfg.seed + 1_000_003 * rank)
    step, history = 0, []
    set_cuda = (lambda c: torch.cuda.set_rng_state(c, dev)) if use_cuda else None
    if resume and path.exists():
        ck, step, history = resume_from(path, model, opt, tcfg, dev)
        ranks = ck.get("rng_ranks")
        if ranks is not None and len(ranks) == world:
            set_rng_state(ranks[rank], set_cuda)
        elif rank == 0:  # a single-process checkpoint (or another world size): rank 0's stream only
            cuda = ck["rng"].get("cuda")
            set_rng_state({**ck["rng"], "cuda": cuda[0] if isinstance(cuda, list) and cuda else None}, set_cuda)
    net: torch.nn.Module = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP

        net = DDP(model, device_ids=[dev.index] if use_cuda else None)
    net = _maybe_compile(net, dev, compile)
    run = RunRecord(variant, preset, mcfg, tcfg, corpus, model, opt, path, history)

    def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        return shard_batch(corpus.train, step, tcfg.batch_size, mcfg.block_size, tcfg.seed, rank, world, dev)

    def mean_loss(loss: torch.Tensor) -> float:  # the global batch's: every rank's mean, averaged
        mean = loss.detach().float()
        if world > 1:
            dist.all_reduce(mean)
            mean = mean / world
        return float(mean.item())

    def out_of_time() -> bool:  # rank 0 decides
        flag = torch.tensor(float(time.time() - t0 > time_limit), device=dev)
        if world > 1:
            dist.broadcast(flag, 0)
        return bool(flag.item())

    def save(step: int) -> None:  # collective: every rank takes part, rank 0 writes
        rngs = [None] * world
        mine = rng_state(torch.cuda.get_rng_state(dev) if use_cuda else None)
        if world > 1:
            dist.all_gather_object(rngs, mine)
        else:
            rngs = [mine]
        rng0 = {**rngs[0], "cuda": [rngs[0]["cuda"]] if rngs[0]["cuda"] is not None else None}
        st = {**run.state(step, rng0), "rng_ranks": rngs, "world_size": world}
        if rank == 0:
            save_checkpoint(path, st)
        if world > 1:
            dist.barrier()

    t0 = time.time()
    step = run_steps(model, opt, tcfg, step, history, batch, net=net, use_amp=use_cuda, loss_value=mean_loss,
                     save=save, stop_at=stop_at, out_of_time=None if time_limit is None else out_of_time,
                     bar=progress_bar(tcfg.steps, step, f"{preset}/{variant} x{world}", progress and rank == 0),
                     tokens_per_step=tcfg.batch_size * mcfg.block_size)
    return {**run.summary(step, time.time() - t0), "world_size": world, "rank": rank}


def _parse_override(text: str) -> tuple[str, object]:
    key, _, raw = text.partition("=")
    if not key or not _:
        raise ValueError(f"--set {text!r} must look like KEY=VALUE")
    for conv in (int, float):
        try:
            return key, conv(raw)
        except ValueError:
            pass
    return key, {"true": True, "false": False, "none": None}.get(raw.lower(), raw)


def main(argv: list[str] | None = None) -> int:
    """The torchrun entry point: a bad option or file is one line on stderr and exit 2 (every rank)."""
    try:
        return _main(argv)
    except ValueError as e:  # InvalidInput (bad input, a bad file) and the configuration checks
        print(f"error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None = None) -> int:
    from stylized.core.options import Choice, Float, Int, OptionParser, arg_type  # OptionParser: one-line usage errors

    from ..model.config import VARIANTS
    from ..model.presets import PRESETS

    ap = OptionParser(prog="python -m simulations.transformer.train.distributed",
                 description="DDP training (launch with torchrun --nproc_per_node=N)")
    ap.add_argument("--variant", required=True, type=arg_type(Choice(*VARIANTS)))
    ap.add_argument("--preset", default="paper", type=arg_type(Choice(*PRESETS)))
    ap.add_argument("--steps", type=arg_type(Int(1, 10**8)), default=None)
    ap.add_argument("--seed", type=arg_type(Int(0, 2**32 - 1)), default=0)
    ap.add_argument("--data", default=None, help="builtin, owt[:FOLDER] (local), or a text file/folder")
    ap.add_argument("--tokenizer", default=None, type=arg_type(Choice("bytes", "bpe")))
    ap.add_argument("--bpe-vocab", type=arg_type(Int(257, 10**6)), default=None)
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--results-dir", default=None)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--force", action="store_true", help="overwrite an existing checkpoint")
    ap.add_argument("--stop-at", type=arg_type(Int(1, 10**8)), default=None)
    ap.add_argument("--backend", default=None, type=arg_type(Choice("nccl", "gloo")))
    ap.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (CUDA only)")
    ap.add_argument("--threads", type=arg_type(Int(1, 256)), default=None, help="torch CPU threads per process")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override any TrainConfig / GPTConfig field (repeatable)")
    ap.add_argument("--time-limit", type=arg_type(Float(0, None, lo_open=True)), default=None,
                    help="seconds of training after which to checkpoint and stop (wall-clock guard)")
    ap.add_argument("--eval", action="store_true", help="rank 0 evaluates the final checkpoint (preset's eval)")
    ap.add_argument("--out", default=None, help="JSON summary written by rank 0")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    overrides = dict(_parse_override(s) for s in args.set)
    overrides.update({k: v for k, v in (("tokenizer", args.tokenizer), ("bpe_vocab", args.bpe_vocab)) if v})
    path = Path(args.ckpt) if args.ckpt else checkpoint_path(args.preset, args.variant, args.seed, args.results_dir)
    if path.exists() and not (args.resume or args.force):
        print(f"error: {path} exists: pass --resume to continue it or --force to overwrite", file=sys.stderr)
        return 2
    check_dir(path.parent, "--results-dir")  # before any work
    if path.exists() and args.force and not args.resume and dist_env()[0] == 0:
        path.unlink()
    config = Preset.from_name(args.preset, variant=args.variant, steps=args.steps, seed=args.seed, data=args.data,
                              **overrides)
    info = train_ddp(config, resume=args.resume, ckpt=path, stop_at=args.stop_at, device=args.device,
                     backend=args.backend, compile=args.compile, time_limit=args.time_limit)
    if info["rank"] == 0:
        def write(partial: dict) -> None:  # atomically, after training and after each evaluated length
            if args.out:
                from stylized.harness.results import atomic_write_text

                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(Path(args.out), json.dumps(partial, indent=1, default=float))

        if args.eval:
            from ..evaluate.extrapolation import evaluate_checkpoint

            write({**info, "eval": [], "eval_complete": False})
            tcfg, ecfg = config.train, config.eval
            corpus = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
            info["eval"] = evaluate_checkpoint(path, ecfg, corpus, device=args.device,
                                               on_rows=lambda rows: write({**info, "eval": rows, "eval_complete": False}))
            info["eval_complete"] = True
        write(info)
        print(f"{args.variant}: {info['step']} steps on {info['world_size']} process(es), "
              f"loss {info['history'][-1][1] if info['history'] else float('nan'):.4f}, {info['seconds']:.0f}s")
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
