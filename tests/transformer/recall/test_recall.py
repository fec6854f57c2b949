"""MQAR recall: the batch generator's invariants, a tiny training run, and evaluate_recall's rows."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.recall.task import (  # noqa: E402
    BOS,
    STAGE_ORDERS,
    Curriculum,
    RecallTask,
    adjacent_batch,
    bootstrap_ci,
    evaluate_recall,
    make_batch,
    stage_batch,
    train_recall,
)

torch.set_num_threads(1)

TASK = RecallTask(n_keys=16, n_values=12, n_noise=8, n_pairs=4, length=32)


def sets(task: RecallTask) -> tuple[set, set, set]:
    return set(task.key_tokens.tolist()), set(task.value_tokens.tolist()), set(task.noise_tokens.tolist())


def test_vocabulary_is_disjoint_and_complete():
    k, v, n = sets(TASK)
    assert not (k & v or k & n or v & n or BOS in k | v | n)
    assert k | v | n | {BOS} == set(range(TASK.vocab_size))
    assert TASK.vocab_size == 1 + 16 + 12 + 8


@pytest.mark.parametrize("n_pairs,n_queries", [(1, 6), (3, 8), (4, 20)])
def test_training_layout(n_pairs, n_queries):
    task = RecallTask(n_keys=16, n_values=12, n_noise=8, n_pairs=4, length=32, n_queries=n_queries)
    x, y = make_batch(task, np.random.default_rng(0), 64, 32, n_pairs)
    k, v, n = sets(task)
    Q = min(n_queries, (32 - 1 - 2 * n_pairs) // 2)  # capped to what fits
    assert x.shape == y.shape == (64, 32) and x.dtype == y.dtype == torch.int64
    starts = set()
    for row, tgt in zip(x.tolist(), y.tolist()):
        assert row[0] == BOS and BOS not in row[1:]
        first = next(t for t, tok in enumerate(row) if tok in k)  # the pair block after the leading filler
        starts.add(first)
        assert set(row[1:first]) <= n
        pairs = row[first: first + 2 * n_pairs]
        keys, vals = pairs[0::2], pairs[1::2]
        assert set(keys) <= k and set(vals) <= v and len(set(keys)) == n_pairs  # distinct keys
        lookup = dict(zip(keys, vals))
        answers = [t for t, g in enumerate(tgt) if g != -100]
        assert len(answers) == Q and set(row[t] for t in answers) <= set(keys)
        for t in answers:  # the query key, its answer as the target and as the next input
            assert t >= first + 2 * n_pairs and tgt[t] == lookup[row[t]] == row[t + 1]
        rest = [tok for t, tok in enumerate(row) if t >= first + 2 * n_pairs and t not in answers
                and t - 1 not in answers]
        assert set(rest) <= n  # filler only from the noise set
        assert all(g == -100 for t, g in enumerate(tgt) if t not in answers)
    if 32 - 1 - 2 * n_pairs - 2 * Q > 0:
        assert len(starts) > 1  # the pair block does not sit at a fixed position


def test_queries_are_drawn_with_replacement():
    task = RecallTask(n_keys=16, n_values=12, n_noise=8, n_pairs=2, length=32, n_queries=8)
    x, y = make_batch(task, np.random.default_rng(2), 32, 32, 2)
    counts = [sorted(np.unique(x[b][y[b] != -100].numpy(), return_counts=True)[1].tolist()) for b in range(32)]
    assert any(c != [4, 4] for c in counts)  # not every pair asked equally often: no answer by elimination


@pytest.mark.parametrize("distance,length", [(8, 32), (20, 40), (300, 320)])
def test_distance_is_honoured(distance, length):
    N = 4
    x, y = make_batch(TASK, np.random.default_rng(1), 16, length, N, distance=distance)
    assert x.shape == (16, length)
    for row, tgt in zip(x.tolist(), y.tolist()):
        answers = [t for t, g in enumerate(tgt) if g != -100]
        assert answers == [length - 2 * N + 2 * i for i in range(N)]  # the query block ends the sequence
        for t in answers:
            assert row[t - distance] == row[t]  # the key, exactly `distance` before its query
            assert row[t - distance + 1] == tgt[t] == row[t + 1]  # followed by its value
        assert row.count(BOS) == 1 and sum(tok in TASK.key_tokens for tok in row) == 2 * N


def test_reproducible_and_argument_checks():
    a = make_batch(TASK, np.random.default_rng(5), 8, 32, 4)
    b = make_batch(TASK, np.random.default_rng(5), 8, 32, 4)
    c = make_batch(TASK, np.random.default_rng(6), 8, 32, 4)
    assert all(torch.equal(p, q) for p, q in zip(a, b)) and not torch.equal(a[0], c[0])
    with pytest.raises(ValueError, match="distance"):
        make_batch(TASK, np.random.default_rng(0), 2, 64, 4, distance=7)  # < 2·n_pairs
    with pytest.raises(ValueError, match="length"):
        make_batch(TASK, np.random.default_rng(0), 2, 20, 4, distance=16)
    with pytest.raises(ValueError, match="length"):
        make_batch(TASK, np.random.default_rng(0), 2, 10, 4)  # no room for one query
    with pytest.raises(ValueError):
        RecallTask(n_keys=2, n_pairs=3)


def test_bootstrap_ci_is_over_sequences():
    acc, lo, hi = bootstrap_ci(np.array([4, 0, 4, 0]), np.array([4, 4, 4, 4]), n_boot=500)
    assert acc == 0.5 and lo < 0.5 < hi and hi - lo > 0.4  # 4 clusters of 4: wide, not 16 i.i.d. queries
    acc, lo, hi = bootstrap_ci(np.array([3, 3]), np.array([3, 3]))
    assert acc == lo == hi == 1.0


def test_tiny_training_lowers_the_loss_and_evaluate_rows():
    task = RecallTask(n_keys=8, n_values=8, n_noise=4, n_pairs=2, length=16, n_queries=4)
    model, curve = train_recall("rope", task, 120, seed=0, n_layer=1, n_embd=32, n_head=2, batch_size=16,
                                lr=3e-3, warmup=10, curriculum=[1, 2], log_every=20)
    assert [p["step"] for p in curve] == list(range(20, 121, 20))
    assert set(curve[0]) >= {"step", "cpu_s", "loss", "acc", "n_pairs", "length"}
    assert curve[-1]["loss"] < curve[0]["loss"] and curve[-1]["cpu_s"] >= curve[0]["cpu_s"] > 0
    assert model.config.init == "torch" and model.config.lm_head == "untied" and not model.training
    rows = evaluate_recall(model, task, [None, 4, 40], [1, 2], n_seqs=12, seed=3, batch_size=5, n_boot=200)
    assert [(r["distance"], r["n_pairs"]) for r in rows] == [(None, 1), (None, 2), (4, 1), (4, 2), (40, 1), (40, 2)]
    for r in rows:
        q = min(4, (16 - 1 - 2 * r["n_pairs"]) // 2) if r["distance"] is None else r["n_pairs"]
        assert r["n_seqs"] == 12 and r["n_queries"] == 12 * q
        assert 0.0 <= r["lo"] <= r["acc"] <= r["hi"] <= 1.0
        assert r["chance"] == 0.125 and r["guess"] == 1.0 / r["n_pairs"]
    assert [r["length"] for r in rows] == [16, 16, 16, 16, 43, 45]
    again = evaluate_recall(model, task, [40], [2], n_seqs=12, seed=3, batch_size=5, n_boot=200)
    assert again[0] == rows[-1]  # a cell's sequences depend on (seed, distance, n_pairs) only


def test_curriculum_stages_and_layouts():
    cur = Curriculum([2, (4, 16), (8, 64, "ordered")], 32, threshold=0.5, window=2)
    assert cur.stages == [(2, 32, "random"), (4, 16, "random"), (8, 64, "ordered")]
    cur.update(1, 0.9)
    cur.update(2, 0.9)
    assert cur.current == (4, 16, "random") and cur.changes == [{"step": 2, "n_pairs": 4, "length": 16,
                                                                  "order": "random"}]
    with pytest.raises(ValueError, match="order"):
        Curriculum([(2, 16, "sideways")], 16)
    for order in STAGE_ORDERS:
        x, y = stage_batch(TASK, np.random.default_rng(0), 6, 3, 32, order)
        assert x.shape == y.shape == (6, 32) and (y != -100).any(1).all()
    x, y = adjacent_batch(TASK, np.random.default_rng(0), 4, 32, 3)
    for row, tgt in zip(x.tolist(), y.tolist()):  # the answer is the previous token
        assert all(tgt[t] == row[t - 1] == row[t + 1] for t, g in enumerate(tgt) if g != -100)
