"""The training presets (``smoke``, ``cpu``, ``cpu-long``, ``gpu``, ``paper``) and the objects a run is configured
by: :class:`Preset` holds the model's :class:`.config.GPTConfig`, the :class:`TrainConfig` and the :class:`EvalConfig`,
built once from a preset's name and the run's overrides (:meth:`Preset.from_name`, litgpt's ``Config.from_name``)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields, replace

from stylized.core.errors import InvalidInput

from ..data.corpus import DEFAULT_MAX_BYTES, TOKENIZERS
from .config import GPTConfig

__all__ = ["CPU_ANGLE_LR_MULT", "CPU_LONG_ANGLE_LR_MULT", "PHASES", "PRESETS", "EvalConfig", "Preset", "TrainConfig"]

#: the cpu preset's angle-table lr multiplier (see ``lr_sweep.py`` for the rule that chose it)
CPU_ANGLE_LR_MULT = 3.0
#: the cpu-long preset's, chosen by the same rule at its budget (``cpu-long_lr_sweep.json``: ×1 and ×3 both inside
#: the best validation loss's interval, ×1 the smallest active one); the committed cpu-long comparison was trained
#: at ×3 before the rule was run and records it in its parameters
CPU_LONG_ANGLE_LR_MULT = 1.0
#: the author's three constant phases: (fraction of the steps, lr)
PHASES = ((0.5, 5e-4), (0.25, 2e-4), (0.25, 5e-5))

#: preset -> (model kwargs, train kwargs, eval kwargs)
PRESETS: dict[str, dict[str, dict]] = {
    "smoke": {
        "model": dict(n_layer=1, n_embd=32, n_head=2, block_size=16, dropout=0.1, path_chunk=8),
        "train": dict(steps=20, batch_size=4, lr=3e-3, warmup=2, ckpt_every=10,
                      max_bytes=200_000),
        "eval": dict(multiples=[1, 2, 4], n_windows=4, batch_tokens=4096, n_boot=200),
    },
    "cpu": {
        # dropout 0: the run sees < 1 epoch of the corpus.  Measured on 2 shared cores with
        # --threads 1: ~90-110 s training per variant (path ~160 s), eval 1x..64x 25 s
        # (alibi ~100 s, path ~115 s); all 8 variants 1205 s.  Use --threads 1 on a busy
        # machine: 2 OpenMP threads competing with other processes ran up to 7x slower.
        # angle_lr_mult: the tables' learning-rate budget (Σ lr over the schedule ≈ 1.1 here
        # against the author's 62.5); chosen by the in-distribution rule of
        # ``simulations/transformer/c6/lr_sweep.py`` (README: "learned angles").
        "model": dict(n_layer=4, n_embd=128, n_head=4, block_size=64, dropout=0.0,
                      path_chunk=64, angle_lr_mult=CPU_ANGLE_LR_MULT),
        "train": dict(steps=1000, batch_size=16, lr=2e-3, warmup=100, ckpt_every=250),
        "eval": dict(multiples=[1, 2, 4, 8, 16, 32, 64, 128], n_windows=32, batch_tokens=32768),
    },
    "cpu-long": {
        # the cpu model at a 4× longer context: L_train 256, 2,500 steps of batch 16 (10.2M tokens, 1.4 epochs of
        # the builtin corpus, dropout 0 as the cpu preset), the same warm-up + cosine schedule (Σ lr ≈ 2.8) and
        # the table multiplier the lr rule picks at this budget (×1; README "cpu-long").  fp32, one torch
        # thread per process: ~14-17 min per run on a free core.  32× is 8,192 tokens, the cpu preset's 128×.
        "model": dict(n_layer=4, n_embd=128, n_head=4, block_size=256, dropout=0.0,
                      path_chunk=64, angle_lr_mult=CPU_LONG_ANGLE_LR_MULT),
        "train": dict(steps=2500, batch_size=16, lr=2e-3, warmup=100, ckpt_every=100),
        "eval": dict(multiples=[1, 2, 4, 8, 16, 32], n_windows=32, batch_tokens=32768),
    },
    "paper": {
        # the author's: 16 × 768, 8 heads, context 512, dropout 0.1, 32K byte-level BPE,
        # 200K steps of batch 32 in three constant phases (Σ lr ≈ 62.5), tables at lr ×1
        # the author's model points: the route j … i−1 (angle_tokens="key"), an untied head with a bias,
        # PyTorch's default init; evaluation on 20 random windows per length from the last 10% (seed 42 + L)
        "model": dict(n_layer=16, n_embd=768, n_head=8, block_size=512, dropout=0.1,
                      vocab_size=32768, path_chunk=64, angle_lr_mult=1.0,
                      angle_tokens="key", lm_head="untied", init="torch"),
        # data: a local OpenWebText folder ($STYLIZED_OWT_DIR or --data owt:/path), all of it,
        # byte-level BPE 32K trained locally; multi-GPU: ``python -m simulations.transformer.train.distributed``
        "train": dict(steps=200_000, batch_size=32, lr=5e-4, warmup=0, ckpt_every=1000,
                      data="owt", schedule="phases", tokenizer="bpe", bpe_vocab=32768,
                      max_bytes=None),
        "eval": dict(multiples=[1, 2, 4, 8, 16, 32, 64, 128], n_windows=20, batch_tokens=131072, windows="author"),
    },
    "gpu": {
        # one H200, ~10 minutes with the 8 main variants as concurrent processes
        # (scripts/gpu_check.sh): 6 × 384, 6 heads (d_h 64), context 256, batch 32, 2,500 steps
        # (20M byte tokens ≈ 2.8 epochs of the builtin corpus, hence the author's dropout 0.1),
        # bf16 autocast (train() on CUDA), cosine schedule; the tables' lr multiplier as the
        # cpu preset's (Σ lr ≈ 1.4 × 10 over the schedule).
        # The author's model points (README "the author's model, point by point") except the schedule: 2,500
        # steps at the author's constant phases would barely train.  Evaluation to 256× = 65,536 tokens, the
        # paper's split regime, on the author's 20 random windows per length.
        "model": dict(n_layer=6, n_embd=384, n_head=6, block_size=256, dropout=0.1,
                      path_chunk=64, angle_lr_mult=CPU_ANGLE_LR_MULT,
                      angle_tokens="key", lm_head="untied", init="torch"),
        "train": dict(steps=2500, batch_size=32, lr=1e-3, warmup=100, ckpt_every=500),
        "eval": dict(multiples=[1, 2, 4, 8, 16, 32, 64, 128, 256], n_windows=20, batch_tokens=65536,
                     windows="author"),
    },
}


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings.

    The author's: AdamW (betas (0.9, 0.999), weight decay 0.1 on every parameter, angle
    tables included, at the same lr), clip 1.0, and a constant lr in three phases
    (``schedule="phases"``: 5e-4 for half the steps, 2e-4 for a quarter, 5e-5 for the rest,
    a fresh AdamW state at each phase, no warm-up).  The short cpu preset keeps warm-up +
    cosine (``schedule="cosine"``) and scales the tables' lr (``angle_lr_mult``) to give
    them a learning-rate budget Σ lr they can move with; see ``PRESETS``.

    ``tokenizer``: ``"bytes"`` (vocab 256, the default) or ``"bpe"`` (a byte-level BPE of
    ``bpe_vocab`` tokens trained locally on the training split, cached; see ``data/corpus.py``).
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

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps={self.steps!r} must be a positive integer")
        if self.schedule not in ("cosine", "phases"):
            raise ValueError(f"schedule={self.schedule!r} is not one of: cosine, phases")
        if self.tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer={self.tokenizer!r} is not one of: {', '.join(TOKENIZERS)}")


@dataclass(frozen=True)
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


#: which config each override goes to: every field of the three (their names are disjoint)
_CONFIG_OF: dict[str, str] = {f.name: part for part, cls in (("model", GPTConfig), ("train", TrainConfig),
                                                              ("eval", EvalConfig)) for f in fields(cls)}


@dataclass(frozen=True)
class Preset:
    """One run's configuration: a preset's model, training and evaluation settings with the run's overrides."""

    name: str
    model: GPTConfig
    train: TrainConfig
    eval: EvalConfig

    @classmethod
    def from_name(cls, name: str, **overrides) -> Preset:
        """The preset ``name`` of :data:`PRESETS` with ``overrides``, each a field of :class:`.config.GPTConfig`
        (``variant`` among them), :class:`TrainConfig` or :class:`EvalConfig`; ``None`` keeps the preset's value.
        A bad name or value is a ``ValueError`` naming it; ``bpe_vocab`` without the BPE tokenizer an
        :class:`~stylized.InvalidInput`."""
        if name not in PRESETS:
            raise ValueError(f"preset={name!r} is not one of: {', '.join(PRESETS)}")
        given = {k: v for k, v in overrides.items() if v is not None}
        for k in given:
            if k not in _CONFIG_OF:
                raise ValueError(f"{k}= is not a config field")
        part = {p: {k: v for k, v in given.items() if _CONFIG_OF[k] == p} for p in ("model", "train", "eval")}
        table = copy.deepcopy(PRESETS[name])
        train = TrainConfig(**{**table["train"], **part["train"]})
        if "bpe_vocab" in given and train.tokenizer != "bpe":  # two options that do not fit together
            raise InvalidInput(f"--bpe-vocab {given['bpe_vocab']} with --tokenizer {train.tokenizer}: a BPE vocabulary "
                               "is only used with --tokenizer bpe (pass --tokenizer bpe, or drop --bpe-vocab)")
        return cls(name, GPTConfig(**{**table["model"], **part["model"]}), train,
                   EvalConfig(**{**table["eval"], **part["eval"]}))

    def with_variant(self, variant: str) -> Preset:
        """The same settings for another variant."""
        return replace(self, model=replace(self.model, variant=variant))

    def record(self) -> dict[str, dict]:
        """What a result records of its preset: per config the fields the preset's table names, in its order,
        with this run's values (``{"model": {...}, "train": {...}, "eval": {...}}``)."""
        return copy.deepcopy({part: {k: getattr(getattr(self, part), k) for k in PRESETS[self.name][part]}
                              for part in ("model", "train", "eval")})
