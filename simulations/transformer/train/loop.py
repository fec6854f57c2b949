"""Training loop: AdamW, warm-up + cosine decay, atomic checkpoints, exact resume.

Batches are a pure function of (seed, step) — the "data position" is the step
counter — so a resumed run sees the same batches as an uninterrupted one.  The
checkpoint also holds the optimizer state and the torch / numpy / python RNG
states (dropout and the random-angle draws use the global torch RNG).
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from stylized.core.errors import InvalidInput

from ..data.corpus import Corpus, load_corpus
from ..model.config import GPTConfig
from ..model.gpt import GPT
from ..model.presets import PHASES, Preset, TrainConfig
from ..paths import checkpoint_path
from .checkpoints import (
    check_dir,
    check_space,
    load_training_state,
    load_weights,
    numpy_state_from_safe,
    numpy_state_to_safe,
    read_checkpoint,
    save_checkpoint,
)


def phase_of(step: int, cfg: TrainConfig) -> int:
    """Index of the author's lr phase that ``step`` (0-based) falls in (``schedule="phases"``)."""
    edge = 0.0
    for i, (frac, _) in enumerate(PHASES):
        edge += frac * cfg.steps
        if step < round(edge):
            return i
    return len(PHASES) - 1


def lr_at(step: int, cfg: TrainConfig) -> float:
    """The learning rate at ``step`` (0-based).

    ``cosine``: linear warm-up to ``lr`` then cosine decay to ``min_lr_frac·lr``.
    ``phases``: the author's constants, scaled by ``lr / 5e-4``.
    """
    if cfg.schedule == "phases":
        return PHASES[phase_of(step, cfg)][1] * cfg.lr / PHASES[0][1]
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    coeff = 0.5 * (1.0 + math.cos(math.pi * min(1.0, frac)))
    return cfg.lr * (cfg.min_lr_frac + (1.0 - cfg.min_lr_frac) * coeff)


def get_batch(tokens: np.ndarray, step: int, batch_size: int, block: int, seed: int,
              device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Batch number ``step``: a deterministic function of (seed, step)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    ix = torch.randint(0, len(tokens) - block - 1, (batch_size,), generator=g).numpy()
    x = np.stack([tokens[i: i + block] for i in ix]).astype(np.int64)
    y = np.stack([tokens[i + 1: i + 1 + block] for i in ix]).astype(np.int64)
    return torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model(path: str | os.PathLike, device: str | None = None, *, label: str = "checkpoint") -> tuple[GPT, dict]:
    """Model (eval mode) and the checkpoint dict, read and checked by :func:`.fileio.read_checkpoint` (a bad
    file is an :class:`~stylized.InvalidInput` naming ``label``)."""
    device = device or default_device()
    ck = read_checkpoint(path, device, label=label)
    model = GPT(GPTConfig(**ck["model_config"])).to(device)
    load_weights(model, ck, path, label=label)
    model.eval()
    return model, ck


def build_model(mcfg: GPTConfig, tcfg: TrainConfig, device, fused: bool) -> tuple[GPT, torch.optim.Optimizer]:
    """The model, initialised from ``tcfg.seed`` (torch, NumPy and Python streams seeded), and its AdamW."""
    torch.manual_seed(tcfg.seed)
    np.random.seed(tcfg.seed)
    random.seed(tcfg.seed)
    model = GPT(mcfg).to(device)
    opt = torch.optim.AdamW(
        model.param_groups(tcfg.weight_decay, tcfg.lr, tcfg.decay_all), lr=tcfg.lr, betas=tuple(tcfg.betas),
        fused=fused or None,
    )
    return model, opt


def resume_from(path: Path, model: GPT, opt: torch.optim.Optimizer, tcfg: TrainConfig, device,
                ck: dict | None = None) -> tuple[dict, int, list]:
    """Load ``path`` (or its already read ``ck``) into ``model`` and ``opt``, every part checked first
    (:func:`.fileio.load_training_state`); returns (checkpoint, step, loss history). RNG states are the caller's."""
    ck = ck if ck is not None else read_checkpoint(path, device, label="--resume", resume=True)
    step = ck["step"]
    if step > tcfg.steps:
        raise InvalidInput(
            f"--steps: {tcfg.steps} is below the checkpoint's step {step} ({path}); "
            "pass a larger --steps or delete the checkpoint"
        )
    load_training_state(ck, model, opt, path)
    return ck, step, list(ck.get("history", []))


def check_corpus(corpus: Corpus, block_size: int) -> None:
    """A corpus long enough to draw one training block from (:func:`get_batch`), else one line naming it."""
    need = block_size + 2
    if len(corpus.train) < need:
        raise InvalidInput(f"--data: the corpus ({corpus.description}) has {len(corpus.train)} training tokens; "
                           f"a block of {block_size} needs at least {need}")


def train_step(net: torch.nn.Module, model: GPT, opt: torch.optim.Optimizer, tcfg: TrainConfig, step: int,
               x: torch.Tensor, y: torch.Tensor, use_amp: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimizer step at ``step`` (0-based): the schedule's lr (a fresh AdamW state at each of the
    author's phases), forward through ``net`` (the model or its DDP wrapper), backward, clip, update;
    returns (logits, loss)."""
    lr = lr_at(step, tcfg)
    if tcfg.schedule == "phases" and step > 0 and phase_of(step, tcfg) != phase_of(step - 1, tcfg):
        opt.state.clear()  # the author starts each phase with a fresh AdamW state
    for g in opt.param_groups:
        g["lr"] = lr * g.get("lr_mult", 1.0)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_amp):
        logits, loss = net(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if tcfg.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg.grad_clip)
    opt.step()
    return logits, loss


def run_steps(model: GPT, opt: torch.optim.Optimizer, tcfg: TrainConfig, step: int, history: list,
              batch: Callable[[int], tuple[torch.Tensor, torch.Tensor]], *, net: torch.nn.Module | None = None,
              use_amp: bool = False, loss_value: Callable[[torch.Tensor], float] = lambda loss: float(loss.item()),
              save: Callable[[int], None] | None = None, stop_at: int | None = None,
              out_of_time: Callable[[], bool] | None = None,
              after_step: Callable[[int, torch.Tensor, torch.Tensor], bool] | None = None,
              bar=None, tokens_per_step: int = 0) -> int:
    """The one training loop of :func:`train`, :func:`.distributed.train_ddp` and :func:`.recall.task.train_recall`.

    From ``step`` to ``tcfg.steps``: batch number ``step`` from ``batch(step)``, one :func:`train_step` through
    ``net`` (default ``model``; DDP: its wrapper), ``(step, loss_value(loss))`` appended to ``history`` (DDP: the
    all-reduced mean).  ``save(step)`` checkpoints every ``tcfg.ckpt_every`` steps, at the last step and at
    ``stop_at``, where the loop stops; ``out_of_time()`` (DDP's wall-clock guard) moves ``stop_at`` to the current
    step; ``after_step(step, y, logits)`` (recall's accuracy, curriculum and log points) stops it by returning
    True.  Returns the step reached; ``bar`` (:func:`progress_bar`) is updated and closed.
    """
    net = model if net is None else net
    net.train()
    t0, start = time.time(), step
    while step < tcfg.steps:
        x, y = batch(step)
        logits, loss = train_step(net, model, opt, tcfg, step, x, y, use_amp)
        step += 1
        history.append((step, loss_value(loss)))
        if out_of_time is not None and step < tcfg.steps and out_of_time():
            stop_at = step
        if bar is not None:
            tps = (step - start) * tokens_per_step / max(1e-9, time.time() - t0)
            bar.update(1)
            bar.set_postfix(loss=f"{history[-1][1]:.3f}", tok_s=f"{tps:,.0f}", refresh=False)
        if save is not None and (step % tcfg.ckpt_every == 0 or step == tcfg.steps or step == stop_at):
            save(step)
        if after_step is not None and after_step(step, y, logits):
            break
        if stop_at is not None and step >= stop_at:
            break
    if bar is not None:
        bar.close()
    return step


def rng_state(cuda: list | torch.Tensor | None = None) -> dict:
    """The torch, CUDA (``cuda``: the caller's, all devices or one), NumPy and Python RNG states, as a checkpoint
    stores them (loadable with ``weights_only=True``)."""
    return {"torch": torch.get_rng_state(), "cuda": cuda, "numpy": numpy_state_to_safe(np.random.get_state()),
            "python": random.getstate()}


def set_rng_state(st: dict, set_cuda: Callable[[object], None] | None = None) -> None:
    """Restore :func:`rng_state`'s ``st``; its CUDA state through ``set_cuda`` (none on a CPU run)."""
    torch.set_rng_state(st["torch"])
    if set_cuda is not None and st.get("cuda") is not None:
        set_cuda(st["cuda"])
    np.random.set_state(numpy_state_from_safe(st["numpy"]))
    random.setstate(st["python"])


@dataclass
class RunRecord:
    """What a run's checkpoints and summary hold besides its step (:func:`train`, :func:`.distributed.train_ddp`)."""

    variant: str
    preset: str
    mcfg: GPTConfig
    tcfg: TrainConfig
    corpus: Corpus
    model: GPT
    opt: torch.optim.Optimizer
    path: Path
    history: list

    def state(self, step: int, rng: dict) -> dict:
        """The checkpoint at ``step`` with the RNG states ``rng``."""
        return {"model": self.model.state_dict(), "optimizer": self.opt.state_dict(), "step": step,
                "model_config": self.mcfg.to_dict(), "train_config": asdict(self.tcfg), "variant": self.variant,
                "preset": self.preset, "corpus": self.corpus.description, "history": self.history, "rng": rng}

    def summary(self, step: int, seconds: float) -> dict:
        """The run's summary: the loss history, the checkpoint, time, tokens and size."""
        return {"variant": self.variant, "preset": self.preset, "step": step, "history": self.history,
                "checkpoint": str(self.path), "seconds": seconds,
                "tokens": step * self.tcfg.batch_size * self.mcfg.block_size, "corpus": self.corpus.description,
                "n_params": self.model.num_params()}


def progress_bar(total: int, initial: int, desc: str, enabled: bool):
    """A tqdm bar (None when disabled or tqdm is missing)."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=initial, desc=desc, mininterval=2.0, dynamic_ncols=True)


def train(
    config: Preset,
    *,
    resume: bool = False,
    ckpt: str | os.PathLike | None = None,
    results_dir: str | os.PathLike | None = None,
    stop_at: int | None = None,
    corpus: Corpus | None = None,
    progress: bool = True,
    device: str | None = None,
    batch_transform: Callable[[torch.Tensor, torch.Tensor, int], tuple[torch.Tensor, torch.Tensor]] | None = None,
) -> dict:
    """Train the variant of ``config`` (:meth:`.presets.Preset.from_name`: its model, steps, seed and corpus);
    returns a summary with the loss history.

    Parameters
    ----------
    resume : bool
        Continue from the checkpoint if one exists (exactly: same batches, RNG,
        optimizer state).
    ckpt : path, optional
        Checkpoint file (default ``results/transformer/checkpoints/<preset>/<variant>.pt``).
    stop_at : int, optional
        Stop (after checkpointing) once this many steps are done — simulates an
        interruption in tests.
    corpus : Corpus, optional
        Pre-loaded corpus (skips loading).
    batch_transform : callable, optional
        ``(x, y, step) -> (x, y)`` applied to every batch (e.g. mixing in passkey
        sequences, :mod:`~simulations.transformer.evaluate.passkey`); a pure function of ``step`` keeps resume exact.
        ``None`` (default) leaves training unchanged.
    """
    mcfg, tcfg = config.model, config.train
    variant, preset, seed = mcfg.variant, config.name, tcfg.seed
    device = device or default_device()
    path = Path(ckpt) if ckpt else checkpoint_path(preset, variant, seed, results_dir)
    check_dir(path.parent, "--results-dir")  # before any work: the checkpoint can be written
    # a resumed checkpoint is read and checked before any work (a bad file: one line naming --resume)
    ck = read_checkpoint(path, device, label="--resume", resume=True) if resume and path.exists() else None
    corpus = corpus or load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
    check_corpus(corpus, mcfg.block_size)
    if corpus.vocab_size > mcfg.vocab_size:
        mcfg = GPTConfig(**{**mcfg.to_dict(), "vocab_size": corpus.vocab_size})

    model, opt = build_model(mcfg, tcfg, device, device == "cuda")
    # before the first step: room for the checkpoint (weights and Adam's two moments, plus the metadata)
    check_space(path.parent, 3 * sum(p.numel() * p.element_size() for p in model.parameters()) + (1 << 16),
                "--results-dir")
    step, history = 0, []
    if ck is not None:
        ck, step, history = resume_from(path, model, opt, tcfg, device, ck=ck)
        set_rng_state(ck["rng"], torch.cuda.set_rng_state_all if device == "cuda" else None)
    run = RunRecord(variant, preset, mcfg, tcfg, corpus, model, opt, path, history)

    def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = get_batch(corpus.train, step, tcfg.batch_size, mcfg.block_size, tcfg.seed, device)
        return (x, y) if batch_transform is None else batch_transform(x, y, step)

    def save(step: int) -> None:
        save_checkpoint(path, run.state(step, rng_state(torch.cuda.get_rng_state_all() if device == "cuda" else None)))

    t0 = time.time()
    step = run_steps(model, opt, tcfg, step, history, batch, use_amp=device == "cuda", save=save, stop_at=stop_at,
                     bar=progress_bar(tcfg.steps, step, f"{preset}/{variant}", progress),
                     tokens_per_step=tcfg.batch_size * mcfg.block_size)
    return run.summary(step, time.time() - t0)
