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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from stylized.core.errors import InvalidInput
from stylized.harness.results import results_dir as _results_dir

from .data import DEFAULT_MAX_BYTES, TOKENIZERS, Corpus, load_corpus
from .fileio import (
    check_dir,
    check_space,
    load_training_state,
    load_weights,
    read_checkpoint,
    save_checkpoint,  # noqa: F401 (atomic; .distributed imports it from here)
)
from .model import GPT, VARIANTS, GPTConfig
from .presets import CPU_ANGLE_LR_MULT, PHASES, PRESETS, get_preset  # noqa: F401  (re-exported: their home is presets.py)


def results_root() -> Path:
    """``<results>/transformer`` (:func:`stylized.harness.results.results_dir`: ``--out``, the checkout, or ``./results``)."""
    return _results_dir() / "transformer"


RESULTS_DIR = results_root()  # fixed at import: prefer results_root(), which follows --out


def run_root(preset: str, results_dir: str | os.PathLike | None) -> tuple[Path, bool]:
    """(results folder of a command, canonical?): ``results_dir`` when given; the committed folder
    (:func:`results_root`) for the cpu preset, which alone is canonical; ``runs/<preset>/`` otherwise."""
    if results_dir:
        return Path(results_dir), False
    return (results_root(), True) if preset == "cpu" else (results_root() / "runs" / preset, False)


def command_outputs(name: str, figure: str, preset: str, results_dir: str | os.PathLike | None
                    ) -> tuple[Path, Path, Path, bool]:
    """(results folder, results file stem ``<name>_<preset>``, figure, canonical?): a canonical run draws
    ``figure`` into the figures folder, any other run beside its results."""
    from stylized.harness.results import figures_dir

    root, canonical = run_root(preset, results_dir)
    return root, root / f"{name}_{preset}", (figures_dir() if canonical else root) / figure, canonical


@dataclass
class TrainConfig:
    """Optimisation settings.

    The author's: AdamW (betas (0.9, 0.999), weight decay 0.1 on every parameter, angle
    tables included, at the same lr), clip 1.0, and a constant lr in three phases
    (``schedule="phases"``: 5e-4 for half the steps, 2e-4 for a quarter, 5e-5 for the rest,
    a fresh AdamW state at each phase, no warm-up).  The short cpu preset keeps warm-up +
    cosine (``schedule="cosine"``) and scales the tables' lr (``angle_lr_mult``) to give
    them a learning-rate budget Σ lr they can move with; see ``PRESETS``.

    ``tokenizer``: ``"bytes"`` (vocab 256, the default) or ``"bpe"`` (a byte-level BPE of
    ``bpe_vocab`` tokens trained locally on the training split, cached; see ``data.py``).
    ``max_bytes``: cap on the corpus text (``None``: all of a local OpenWebText copy).
    """

    steps: int = 1000
    batch_size: int = 16
    lr: float = 2e-3
    min_lr_frac: float = 0.1
    warmup: int = 50
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    betas: tuple[float, float] = (0.9, 0.999)
    decay_all: bool = True
    schedule: str = "cosine"
    ckpt_every: int = 200
    seed: int = 0
    data: str | None = None
    max_bytes: int | None = DEFAULT_MAX_BYTES
    tokenizer: str = "bytes"
    bpe_vocab: int = 4096


@dataclass
class EvalConfig:
    """Length-extrapolation evaluation settings.

    ``windows``: ``"grid"`` (``n_windows`` window ends spread evenly over the validation split, the same ends at
    every length, so each window's log-ratio ``loss_L − loss_{L_train}`` is paired; the default) or ``"author"``
    (the author's: ``n_windows`` random windows per length from the last 10% of the validation tokens, drawn
    with seed ``42 + L``, different windows at each length, so only means compare across lengths).
    """

    multiples: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64])
    n_windows: int = 32
    batch_tokens: int = 32768
    n_samples: int = 1
    n_boot: int = 2000
    windows: str = "grid"




def make_configs(
    variant: str, preset: str, **overrides
) -> tuple[GPTConfig, TrainConfig, EvalConfig]:
    """Configs of a preset; ``overrides`` may set any TrainConfig / GPTConfig field."""
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not one of: {', '.join(VARIANTS)}")
    p = get_preset(preset)
    tkeys = set(TrainConfig.__dataclass_fields__)
    mkeys = set(GPTConfig.__dataclass_fields__)
    for k, v in overrides.items():
        if v is None:
            continue
        if k in tkeys:
            p["train"][k] = v
        elif k in mkeys:
            p["model"][k] = v
        else:
            raise ValueError(f"{k}= is not a config field")
    tcfg = TrainConfig(**p["train"])
    if tcfg.steps < 1:
        raise ValueError(f"steps={tcfg.steps!r} must be a positive integer")
    if tcfg.schedule not in ("cosine", "phases"):
        raise ValueError(f"schedule={tcfg.schedule!r} is not one of: cosine, phases")
    if tcfg.tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer={tcfg.tokenizer!r} is not one of: {', '.join(TOKENIZERS)}")
    if overrides.get("bpe_vocab") is not None and tcfg.tokenizer != "bpe":  # two options that do not fit together
        raise InvalidInput(f"--bpe-vocab {overrides['bpe_vocab']} with --tokenizer {tcfg.tokenizer}: a BPE vocabulary "
                           "is only used with --tokenizer bpe (pass --tokenizer bpe, or drop --bpe-vocab)")
    return GPTConfig(variant=variant, **p["model"]), tcfg, EvalConfig(**p["eval"])


def checkpoint_path(preset: str, variant: str, seed: int = 0,
                    results_dir: str | os.PathLike | None = None) -> Path:
    root = Path(results_dir) if results_dir else results_root()
    name = variant if seed == 0 else f"{variant}-s{seed}"
    return root / "checkpoints" / preset / f"{name}.pt"


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


def _numpy_state_to_safe(st: tuple) -> tuple:
    """NumPy's legacy RNG state with its key array as a tensor (loadable with ``weights_only=True``)."""
    return (st[0], torch.from_numpy(np.asarray(st[1], dtype=np.int64)), int(st[2]), int(st[3]), float(st[4]))


def _numpy_state_from_safe(st: tuple) -> tuple:
    return (st[0], np.asarray(st[1].numpy() if torch.is_tensor(st[1]) else st[1], dtype=np.uint32),
            int(st[2]), int(st[3]), float(st[4]))


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
               x: torch.Tensor, y: torch.Tensor, use_amp: bool) -> torch.Tensor:
    """One optimizer step at ``step`` (0-based): the schedule's lr (a fresh AdamW state at each of the
    author's phases), forward through ``net`` (the model or its DDP wrapper), backward, clip, update."""
    lr = lr_at(step, tcfg)
    if tcfg.schedule == "phases" and step > 0 and phase_of(step, tcfg) != phase_of(step - 1, tcfg):
        opt.state.clear()  # the author starts each phase with a fresh AdamW state
    for g in opt.param_groups:
        g["lr"] = lr * g.get("lr_mult", 1.0)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_amp):
        _, loss = net(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if tcfg.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg.grad_clip)
    opt.step()
    return loss


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
    variant: str,
    preset: str = "smoke",
    *,
    steps: int | None = None,
    seed: int = 0,
    data: str | None = None,
    resume: bool = False,
    ckpt: str | os.PathLike | None = None,
    results_dir: str | os.PathLike | None = None,
    stop_at: int | None = None,
    corpus: Corpus | None = None,
    progress: bool = True,
    device: str | None = None,
    batch_transform: Callable[[torch.Tensor, torch.Tensor, int], tuple[torch.Tensor, torch.Tensor]] | None = None,
    **overrides,
) -> dict:
    """Train ``variant`` under ``preset``; returns a summary with the loss history.

    Parameters
    ----------
    steps, seed, data :
        Override the preset's number of steps, seed, and corpus (``--data``).
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
        sequences, :mod:`.passkey`); a pure function of ``step`` keeps resume exact.
        ``None`` (default) leaves training unchanged.
    """
    mcfg, tcfg, _ = make_configs(variant, preset, steps=steps, seed=seed, data=data, **overrides)
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
    step = 0
    history: list[tuple[int, float]] = []
    if ck is not None:
        ck, step, history = resume_from(path, model, opt, tcfg, device, ck=ck)
        torch.set_rng_state(ck["rng"]["torch"])
        if device == "cuda" and ck["rng"].get("cuda") is not None:
            torch.cuda.set_rng_state_all(ck["rng"]["cuda"])
        np.random.set_state(_numpy_state_from_safe(ck["rng"]["numpy"]))
        random.setstate(ck["rng"]["python"])

    def state() -> dict:
        return {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "step": step,
            "model_config": mcfg.to_dict(),
            "train_config": asdict(tcfg),
            "variant": variant,
            "preset": preset,
            "corpus": corpus.description,
            "history": history,
            "rng": {
                "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if device == "cuda" else None,
                "numpy": _numpy_state_to_safe(np.random.get_state()),
                "python": random.getstate(),
            },
        }

    use_amp = device == "cuda"
    tokens_per_step = tcfg.batch_size * mcfg.block_size
    bar = progress_bar(tcfg.steps, step, f"{preset}/{variant}", progress)
    model.train()
    t0 = time.time()
    start_step = step
    while step < tcfg.steps:
        x, y = get_batch(corpus.train, step, tcfg.batch_size, mcfg.block_size, tcfg.seed, device)
        if batch_transform is not None:
            x, y = batch_transform(x, y, step)
        loss = train_step(model, model, opt, tcfg, step, x, y, use_amp)
        step += 1
        history.append((step, float(loss.item())))
        if bar is not None:
            tps = (step - start_step) * tokens_per_step / max(1e-9, time.time() - t0)
            bar.update(1)
            bar.set_postfix(loss=f"{history[-1][1]:.3f}", tok_s=f"{tps:,.0f}", refresh=False)
        if step % tcfg.ckpt_every == 0 or step == tcfg.steps or step == stop_at:
            save_checkpoint(path, state())
        if stop_at is not None and step >= stop_at:
            break
    if bar is not None:
        bar.close()
    return {
        "variant": variant,
        "preset": preset,
        "step": step,
        "history": history,
        "checkpoint": str(path),
        "seconds": time.time() - t0,
        "tokens": step * tokens_per_step,
        "corpus": corpus.description,
        "n_params": model.num_params(),
    }
