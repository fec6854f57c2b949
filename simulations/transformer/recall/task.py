"""Multi-query associative recall (MQAR, Zoology style) for the small GPT models.

Vocabulary (disjoint sets, :class:`RecallTask`): token 0 is ``BOS`` (every sequence starts with it), then
``n_keys`` keys, ``n_values`` values and ``n_noise`` filler tokens (default 32 / 32 / 16: vocab 81).

Training sequence of ``L`` tokens (``distance=None``)::

    BOS [filler] k_1 v_1 k_2 v_2 … k_N v_N  [filler with Q query slots "k_i v_i" at random places]

The N keys are distinct, the values drawn with replacement; the filler before the block has a
uniform length.  Each slot repeats one key of the block followed by its value (Q = ``n_queries``
slots, capped to what fits; the queried pairs are drawn i.i.d., so a key may be asked twice and no
answer follows by elimination: asking every pair once let a first calibration run learn "the value
not yet given" for the last query instead of the lookup).  The value is fed as the next input
(teacher forcing); ``targets[t] = v_i`` where ``idx[t]`` is a query key, ``-100`` everywhere else.

Distance sequence (``distance=d``, for evaluation)::

    BOS [filler] k_1 v_1 … k_N v_N [filler] k_1 v_1 … k_N v_N        (the query block ends the sequence)

Every pair is asked once, in the block's order, so *every* query key sits exactly ``d`` positions
after its key (``d ≥ 2N``; length ``≥ d + 2N + 1``, any multiple of L_train).  Accuracy: argmax over
the value tokens only (``restrict=True``, the default; ``False``: the full vocabulary) at the answer
positions; chance ``1/n_values``, guessing one of the values present ``1/N``.  Interval: 95%
percentile bootstrap over *sequences* (a sequence's queries share its pairs, so they are resampled
together: a cluster bootstrap, :func:`bootstrap_ci`).

Calibration (``simulations/results/transformer/recall_calibration.json``; :data:`CALIBRATED`): what
made the lookup learnable was the model's init and output head, not the task.  With the nanoGPT
init (N(0, 0.02)) and the tied head no lookup formed in any setting tried (up to 15,000 steps; 2 to 16
pairs, 12 to 64 tokens, widths 64/128, 2 to 4 layers, lr 1e-3..1e-2, curricula) for rope or nope:
accuracy stayed at the value-guessing level.  With the author's model points ``init="torch"`` and
``lm_head="untied"`` (both needed), lr 1e-3, no weight decay or clipping, and the curriculum
(2 pairs, L 16) → (4, 32) → (8, 64), a 2 × 64 model with 2 heads reaches ≥ 95% at 8 pairs, L 64:
rope in ~10 CPU s, nope in ~2 CPU min (one thread).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ..model.gpt import GPT
from ..model.presets import Preset, TrainConfig
from ..train.loop import lr_at, run_steps

__all__ = ["BOS", "CALIBRATED", "STAGE_ORDERS", "RecallTask", "Curriculum", "make_batch", "adjacent_batch",
           "stage_batch", "answer_accuracy", "bootstrap_ci", "train_recall", "evaluate_recall"]

BOS = 0
#: curriculum stage layouts (:func:`stage_batch`)
STAGE_ORDERS = ("random", "ordered", "mixed", "adjacent", "adjmix")
#: the calibrated training settings (``train_recall(variant, RecallTask(), steps, seed, **CALIBRATED)``)
#: (train_recall's defaults plus the curriculum; the calibration runs used steps=12000, stop_acc=0.95)
CALIBRATED: dict = dict(n_layer=2, n_embd=64, n_head=2, batch_size=32, lr=1e-3, warmup=100, weight_decay=0.0,
                        grad_clip=0.0, init="torch", lm_head="untied", curriculum=((2, 16), (4, 32), (8, 64)),
                        threshold=0.9, window=50)


@dataclass
class RecallTask:
    """The MQAR vocabulary layout and training shape.

    Parameters
    ----------
    n_keys, n_values, n_noise : int
        Sizes of the three disjoint token sets (after ``BOS`` = 0).
    n_pairs : int
        Key-value pairs per training sequence (the curriculum's last stage).
    length : int
        Training length L_train (tokens per sequence, ``BOS`` included).
    n_queries : int or None
        Query slots per training sequence (``None``: as many as pairs; capped to what fits the
        length), the queried pairs drawn with replacement.
    """

    n_keys: int = 32
    n_values: int = 32
    n_noise: int = 16
    n_pairs: int = 8
    length: int = 64
    n_queries: int | None = 16

    def __post_init__(self) -> None:
        for name in ("n_keys", "n_values", "n_noise", "n_pairs", "length"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r} must be a positive integer")
        if self.n_pairs > self.n_keys:
            raise ValueError(f"n_pairs={self.n_pairs} needs at least as many keys (n_keys={self.n_keys})")
        if 3 + 2 * self.n_pairs > self.length:
            raise ValueError(f"length={self.length} is too short for {self.n_pairs} pairs and their queries")

    @property
    def vocab_size(self) -> int:
        return 1 + self.n_keys + self.n_values + self.n_noise

    @property
    def key_tokens(self) -> np.ndarray:
        return np.arange(1, 1 + self.n_keys)

    @property
    def value_tokens(self) -> np.ndarray:
        return np.arange(1 + self.n_keys, 1 + self.n_keys + self.n_values)

    @property
    def noise_tokens(self) -> np.ndarray:
        return np.arange(1 + self.n_keys + self.n_values, self.vocab_size)

    def queries(self, n_pairs: int) -> int:
        """Query slots of a training sequence with ``n_pairs`` pairs."""
        return n_pairs if self.n_queries is None else self.n_queries

    def to_dict(self) -> dict:
        return {**asdict(self), "vocab_size": self.vocab_size}


def make_batch(task: RecallTask, rng: np.random.Generator, batch: int, length: int | None = None,
               n_pairs: int | None = None, distance: int | np.ndarray | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` MQAR sequences (``idx``, ``targets``), both LongTensor [batch, length].

    ``distance=None``: the training layout (filler of uniform length before the pair block, the queries
    scattered in the filler after it, the queried pairs drawn i.i.d.); ``distance=d``: the pair block
    ``d`` positions before the query block that ends the sequence, every pair asked once in the block's
    order, so each key-to-query distance is exactly ``d`` (an int, or one per row).  Reproducible: a
    pure function of ``rng``'s state.
    """
    L = task.length if length is None else int(length)
    N = task.n_pairs if n_pairs is None else int(n_pairs)
    if not 1 <= N <= task.n_keys:
        raise ValueError(f"n_pairs={N} must be in 1..n_keys={task.n_keys}")
    keys = np.argsort(rng.random((batch, task.n_keys)), axis=1)[:, :N] + 1  # distinct per row
    vals = rng.integers(0, task.n_values, size=(batch, N)) + 1 + task.n_keys
    idx = rng.integers(0, task.n_noise, size=(batch, L)) + 1 + task.n_keys + task.n_values
    idx[:, 0] = BOS
    tgt = np.full((batch, L), -100, dtype=np.int64)
    rows = np.arange(batch)[:, None]
    if distance is None:
        Q = min(task.queries(N), (L - 1 - 2 * N) // 2)  # as many as fit
        free = L - 1 - 2 * N - 2 * Q  # filler tokens after the pair block
        if Q < 1:
            raise ValueError(f"length={L} is too short for {N} pairs and {Q} queries (needs {1 + 2 * N + 2 * Q})")
        pre = rng.integers(0, free + 1, size=(batch, 1))  # filler before the pair block: uniform 0..free
        pairs_at = 1 + pre + 2 * np.arange(N)
        idx[rows, pairs_at], idx[rows, pairs_at + 1] = keys, vals
        # Q slots among the free - pre + Q items after the block: slot j at 1 + pre + 2N + s_j + j (s sorted)
        r = rng.random((batch, free + Q))
        r[np.arange(free + Q) >= free - pre + Q] = 2.0  # items past the row's region are never picked
        s = np.sort(np.argsort(r, axis=1)[:, :Q], axis=1)
        q_at = 1 + pre + 2 * N + s + np.arange(Q)
        which = rng.integers(0, N, size=(batch, Q))  # queried pairs: i.i.d., so no answer follows by elimination
    else:
        d = np.broadcast_to(np.asarray(distance, dtype=np.int64).reshape(-1, 1), (batch, 1))  # one or per row
        if d.min() < 2 * N:
            raise ValueError(f"distance={d.min()} must be at least 2·n_pairs={2 * N} (the pair block precedes the "
                             "queries)")
        if L < d.max() + 2 * N + 1:
            raise ValueError(f"length={L} is too short for distance={d.max()} with {N} pairs "
                             f"(needs {d.max() + 2 * N + 1})")
        q_at = np.broadcast_to(L - 2 * N + 2 * np.arange(N), (batch, N))
        pairs_at = L - 2 * N - d + 2 * np.arange(N)
        idx[rows, pairs_at], idx[rows, pairs_at + 1] = keys, vals
        which = np.broadcast_to(np.arange(N), (batch, N))
    idx[rows, q_at] = keys[rows, which]
    idx[rows, q_at + 1] = vals[rows, which]
    tgt[rows, q_at] = vals[rows, which]
    return torch.from_numpy(idx.astype(np.int64)), torch.from_numpy(tgt)


def answer_accuracy(logits: torch.Tensor, targets: torch.Tensor, task: RecallTask,
                    restrict: bool = True) -> torch.Tensor:
    """Correct answers per sequence [B] (argmax over the value tokens when ``restrict``, else the vocab)."""
    mask = targets != -100
    if restrict:
        lo = 1 + task.n_keys
        pred = logits[..., lo: lo + task.n_values].argmax(-1) + lo
    else:
        pred = logits.argmax(-1)
    return ((pred == targets) & mask).sum(1)


def bootstrap_ci(correct: np.ndarray, queries: np.ndarray, n_boot: int = 2000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float, float]:
    """Pooled accuracy ``Σcorrect/Σqueries`` and its percentile bootstrap interval over sequences (clusters)."""
    c, q = np.asarray(correct, float), np.asarray(queries, float)
    acc = float(c.sum() / q.sum())
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(c), size=(n_boot, len(c)))
    boots = c[pick].sum(1) / q[pick].sum(1)
    a = (1.0 - level) / 2.0
    return acc, float(np.quantile(boots, a)), float(np.quantile(boots, 1.0 - a))


class Curriculum:
    """Training stages, each ``n_pairs``, ``(n_pairs, length)`` or ``(n_pairs, length, order)``.

    ``order`` (:func:`stage_batch`): ``"random"`` (the training layout, the default) or one of the
    layouts tried in calibration.  The next stage starts once the mean answer accuracy over the last
    ``window`` training batches reaches ``threshold``.
    """

    def __init__(self, stages: Sequence[int | Sequence], default_length: int, threshold: float = 0.9,
                 window: int = 50) -> None:
        self.stages: list[tuple[int, int, str]] = []
        for st in stages:
            st = (st,) if np.ndim(st) == 0 else tuple(st)
            n, L, order = (list(st) + [default_length, "random"][len(st) - 1:])[:3]
            if order not in STAGE_ORDERS:
                raise ValueError(f"curriculum order={order!r} is not one of: {', '.join(STAGE_ORDERS)}")
            self.stages.append((int(n), int(L), str(order)))
        self.threshold, self.window = float(threshold), int(window)
        self.stage, self.recent, self.changes = 0, [], []

    @property
    def current(self) -> tuple[int, int, str]:
        return self.stages[self.stage]

    @property
    def last(self) -> bool:
        return self.stage + 1 == len(self.stages)

    def update(self, step: int, acc: float) -> None:
        self.recent = (self.recent + [acc])[-self.window:]
        if (not self.last and len(self.recent) == self.window
                and sum(self.recent) / self.window >= self.threshold):
            self.stage += 1
            self.recent = []
            n, L, order = self.current
            self.changes.append({"step": step, "n_pairs": n, "length": L, "order": order})


def adjacent_batch(task: RecallTask, rng: np.random.Generator, batch: int, length: int,
                   n_pairs: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every pair asked right after it is given: ``BOS [filler] k_1 v_1 k_1 v_1 k_2 v_2 k_2 v_2 …``.

    The answer is the previous token (distance 2): a curriculum stage that rewards a previous-token
    head, the first half of the induction circuit the random layout needs.
    """
    N, L = int(n_pairs), int(length)
    if L < 1 + 4 * N:
        raise ValueError(f"length={L} is too short for {N} adjacent pairs (needs {1 + 4 * N})")
    keys = np.argsort(rng.random((batch, task.n_keys)), axis=1)[:, :N] + 1
    vals = rng.integers(0, task.n_values, size=(batch, N)) + 1 + task.n_keys
    idx = rng.integers(0, task.n_noise, size=(batch, L)) + 1 + task.n_keys + task.n_values
    idx[:, 0] = BOS
    tgt = np.full((batch, L), -100, dtype=np.int64)
    rows = np.arange(batch)[:, None]
    at = 1 + rng.integers(0, L - 4 * N, size=(batch, 1)) + 4 * np.arange(N)
    for off, src in ((0, keys), (1, vals), (2, keys), (3, vals)):
        idx[rows, at + off] = src
    tgt[rows, at + 2] = vals
    return torch.from_numpy(idx.astype(np.int64)), torch.from_numpy(tgt)


def stage_batch(task: RecallTask, rng: np.random.Generator, batch: int, n_pairs: int, length: int,
                order: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A training batch of a curriculum stage.

    ``order``: ``"random"`` (:func:`make_batch`'s training layout), ``"ordered"`` (its distance layout,
    d uniform in ``2N .. L-2N-1`` per row), ``"mixed"`` (half the rows each), ``"adjacent"``
    (:func:`adjacent_batch`) or ``"adjmix"`` (half adjacent, half random).  Calibration: the ordered
    layout is learned by a shortcut that does not transfer to random order; neither adjacent layout
    helped (see the module docstring).
    """
    if order == "adjacent":
        return adjacent_batch(task, rng, batch, length, n_pairs)
    n_aux = {"random": 0, "ordered": batch, "mixed": batch // 2, "adjmix": batch // 2}[order]
    parts = []
    if n_aux and order == "adjmix":
        parts.append(adjacent_batch(task, rng, n_aux, length, n_pairs))
    elif n_aux:
        parts.append(make_batch(task, rng, n_aux, length, n_pairs,
                                rng.integers(2 * n_pairs, length - 2 * n_pairs, size=n_aux)))
    if batch - n_aux:
        parts.append(make_batch(task, rng, batch - n_aux, length, n_pairs))
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def train_recall(variant: str, task: RecallTask, steps: int, seed: int = 0, *, n_layer: int = 2,
                 n_embd: int = 64, n_head: int = 2, batch_size: int = 32, lr: float = 1e-3, warmup: int = 100,
                 weight_decay: float = 0.0, min_lr_frac: float = 0.1, grad_clip: float = 0.0,
                 init: str = "torch", lm_head: str = "untied", curriculum: Sequence[int | Sequence] | None = None,
                 threshold: float = 0.9, window: int = 50, log_every: int = 100, cpu_budget: float | None = None,
                 stop_acc: float | None = None, log: Callable[[dict], None] | None = None,
                 **model_overrides) -> tuple[GPT, list[dict]]:
    """Train ``variant`` on MQAR batches; returns (model in eval mode, learning curve).

    The model: ``GPT`` of the smoke preset with ``n_layer × n_embd``, ``n_head`` heads, dropout 0,
    ``block_size = task.length``, the task's vocabulary, ``init`` / ``lm_head`` (defaults: the author's
    points, which the lookup needs; see the module docstring) and any other ``GPTConfig`` field in
    ``model_overrides``.  Torch is seeded with ``seed`` (init), the batches come from
    ``numpy.random.default_rng([seed, 1])``.  Warm-up + cosine schedule over ``steps``
    (:func:`.train.lr_at`), AdamW (betas 0.9, 0.999) on ``GPT.param_groups`` (so the learned tables get
    ``angle_lr_mult``), gradient clip ``grad_clip`` (0: none), loss on the answer positions only.
    ``curriculum``: the stages of :class:`Curriculum` (``None``: ``task.n_pairs`` at ``task.length``).
    ``curve``: every ``log_every`` steps ``{step, cpu_s, loss, acc, n_pairs, length, order, lr}``, loss and
    accuracy averaged over those steps' training batches (fresh samples: a held-out estimate at the
    current stage), ``cpu_s`` this process's CPU seconds since the start.  ``cpu_budget`` stops after that
    many CPU seconds; ``stop_acc`` once a logged accuracy at the last stage reaches it (both at a log
    point); ``log`` gets every curve point.  The model's ``curriculum_changes`` lists the stage changes.
    """
    mcfg = Preset.from_name("smoke", variant=variant, n_layer=n_layer, n_embd=n_embd, n_head=n_head,
                            block_size=task.length, dropout=0.0, vocab_size=task.vocab_size, init=init,
                            lm_head=lm_head, **model_overrides).model
    tcfg = TrainConfig(steps=steps, batch_size=batch_size, lr=lr, min_lr_frac=min_lr_frac, warmup=warmup,
                       weight_decay=weight_decay, grad_clip=grad_clip, schedule="cosine")
    torch.manual_seed(seed)
    model = GPT(mcfg)
    opt = torch.optim.AdamW(model.param_groups(weight_decay, lr), lr=lr, betas=(0.9, 0.999))
    rng = np.random.default_rng([seed, 1])
    cur = Curriculum(curriculum or [task.n_pairs], task.length, threshold, window)
    t0 = time.process_time()
    curve: list[dict] = []
    history: list[tuple[int, float]] = []
    accs: list[float] = []

    def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        n_pairs, length, order = cur.current
        return stage_batch(task, rng, batch_size, n_pairs, length, order)

    def after_step(step: int, y: torch.Tensor, logits: torch.Tensor) -> bool:
        """The batch's answer accuracy, the curriculum, and the curve at a log point; True stops training."""
        (n_pairs, length, order), last = cur.current, cur.last  # the stage the batch was drawn at
        with torch.no_grad():  # "adjmix": the accuracy of the random-layout rows (the second half) only
            r0 = batch_size // 2 if order == "adjmix" else 0
            acc = float(answer_accuracy(logits[r0:], y[r0:], task).sum()) / float((y[r0:] != -100).sum())
        accs.append(acc)
        cur.update(step, acc)
        if step % log_every and step != steps:
            return False
        point = {"step": step, "cpu_s": round(time.process_time() - t0, 2),
                 "loss": round(float(np.mean([loss for _, loss in history[-len(accs):]])), 4),
                 "acc": round(float(np.mean(accs)), 4), "n_pairs": n_pairs, "length": length, "order": order,
                 "lr": lr_at(step - 1, tcfg)}
        curve.append(point)
        if log is not None:
            log(point)
        accs.clear()
        return bool((stop_acc is not None and last and point["acc"] >= stop_acc)
                    or (cpu_budget is not None and point["cpu_s"] >= cpu_budget))

    run_steps(model, opt, tcfg, 0, history, batch, after_step=after_step)
    model.eval()
    model.curriculum_changes = cur.changes  # type: ignore[attr-defined]
    return model, curve


@torch.no_grad()
def evaluate_recall(model: GPT, task: RecallTask, distances: Sequence[int | None], n_pairs_list: Sequence[int],
                    n_seqs: int = 200, seed: int = 0, *, length: int | None = None, batch_size: int = 50,
                    restrict: bool = True, n_boot: int = 2000, level: float = 0.95) -> list[dict]:
    """Answer accuracy per (distance, n_pairs): one row each.

    ``distance=None``: the training layout at ``length`` (default ``task.length``); ``distance=d``: every
    query ``d`` positions after its key, in a sequence of ``max(task.length, d + 2N + 1)`` tokens (or
    ``length`` when given).  Row: ``distance, n_pairs, length, n_seqs, n_queries, acc, lo, hi`` (the
    interval: cluster bootstrap over sequences, :func:`bootstrap_ci`), ``chance`` = 1/n_values,
    ``guess`` = 1/n_pairs.  A cell's sequences depend only on (``seed``, distance, n_pairs), so cells are
    reproducible and the same in any grid.  The model has no position table: any length runs (64 ×
    L_train = 4,096 for L_train 64).
    """
    model.eval()
    rows = []
    for d in distances:
        for N in n_pairs_list:
            L = length or (task.length if d is None else max(task.length, int(d) + 2 * int(N) + 1))
            rng = np.random.default_rng([seed, 2, 0 if d is None else int(d) + 1, int(N)])
            correct, queries = [], []
            for start in range(0, n_seqs, batch_size):
                b = min(batch_size, n_seqs - start)
                x, y = make_batch(task, rng, b, L, N, d)
                logits, _ = model(x)
                correct.append(answer_accuracy(logits, y, task, restrict).numpy())
                queries.append((y != -100).sum(1).numpy())
            c, q = np.concatenate(correct), np.concatenate(queries)
            acc, lo, hi = bootstrap_ci(c, q, n_boot, level, seed)
            rows.append({"distance": d, "n_pairs": int(N), "length": int(L), "n_seqs": int(n_seqs),
                         "n_queries": int(q.sum()), "acc": round(acc, 4), "lo": round(lo, 4), "hi": round(hi, 4),
                         "chance": round(1.0 / task.n_values, 4), "guess": round(1.0 / int(N), 4),
                         "restrict": restrict})
    return rows
