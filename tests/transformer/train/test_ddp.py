"""DDP training: 2 Gloo processes on CPU follow the single-process loss trajectory, and resume."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from simulations.transformer.data import corpus as data  # noqa: E402
from simulations.transformer.model.presets import Preset  # noqa: E402
from simulations.transformer.train.distributed import shard_batch, train_ddp  # noqa: E402
from simulations.transformer.train.loop import get_batch, train  # noqa: E402

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()), reason="no gloo")


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("ddp_corpus")
    rng = np.random.default_rng(1)
    words = ["alpha", "beta", "gamma", "def", "return", "(x)", "\n", "  ", "=", "1", "for", "in"]
    for i in range(12):
        (d / f"f{i:02d}.txt").write_text(" ".join(rng.choice(words, 300)))
    return d


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(world: int, args: list[str], out: Path) -> None:
    """``world`` processes of the entry point, as torchrun would start them (loopback only)."""
    port = _free_port()
    procs = []
    for rank in range(world):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "GLOO_SOCKET_IFNAME": "lo",
               "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "simulations.transformer.train.distributed", *args, "--device", "cpu",
               "--threads", "1", "--out", str(out)]
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    logs = [p.communicate(timeout=240)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(logs)


def test_shard_rows_are_the_global_batch():
    tokens = np.arange(1000, dtype=np.uint8)
    x, y = get_batch(tokens, 7, 6, 16, 3)
    parts = [shard_batch(tokens, 7, 6, 16, 3, r, 3) for r in range(3)]
    assert torch.equal(torch.cat([p[0] for p in parts]), x) and torch.equal(torch.cat([p[1] for p in parts]), y)
    with pytest.raises(ValueError, match="divisible"):
        shard_batch(tokens, 0, 5, 16, 3, 0, 2)


def test_one_process_equals_train(text_dir, tmp_path):
    corpus = data.load_path(text_dir)
    kw = dict(corpus=corpus, progress=False, device="cpu")
    a = train(Preset.from_name("smoke", variant="random-qkv", steps=4, dropout=0.1), ckpt=tmp_path / "a.pt", **kw)
    b = train_ddp(Preset.from_name("smoke", variant="random-qkv", steps=4, dropout=0.1), ckpt=tmp_path / "b.pt", **kw)
    assert a["history"] == b["history"]  # bit-identical, dropout and random angles included
    ck = torch.load(tmp_path / "b.pt", weights_only=True)
    assert ck["world_size"] == 1 and len(ck["rng_ranks"]) == 1


def test_two_gloo_processes_match_one_and_resume(text_dir, tmp_path):
    variant, steps = "learned-qkv", 4
    ref = train(Preset.from_name("smoke", variant=variant, steps=steps, dropout=0.0), corpus=data.load_path(text_dir),
                ckpt=tmp_path / "ref.pt", progress=False, device="cpu")
    ck = tmp_path / "ddp.pt"
    common = ["--variant", variant, "--preset", "smoke", "--steps", str(steps), "--data", str(text_dir),
              "--ckpt", str(ck), "--set", "dropout=0.0"]
    _launch(2, [*common, "--stop-at", "2"], tmp_path / "part.json")
    part = json.loads((tmp_path / "part.json").read_text())
    assert part["step"] == 2 and part["world_size"] == 2
    saved = torch.load(ck, weights_only=True)
    assert saved["world_size"] == 2 and len(saved["rng_ranks"]) == 2 and saved["step"] == 2
    _launch(2, [*common, "--resume"], tmp_path / "full.json")
    full = json.loads((tmp_path / "full.json").read_text())
    got = np.array([loss for _, loss in full["history"]])
    want = np.array([loss for _, loss in ref["history"]])
    assert len(got) == steps
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=0)
    assert got[-1] < got[0]  # and it trains
    # the final weights agree as well
    w_ddp, w_one = torch.load(ck, weights_only=True)["model"], torch.load(tmp_path / "ref.pt", weights_only=True)["model"]
    for name in w_one:
        torch.testing.assert_close(w_ddp[name], w_one[name], rtol=1e-4, atol=1e-5, msg=name)


def test_time_limit_checkpoints_and_stops(text_dir, tmp_path):
    info = train_ddp(Preset.from_name("smoke", variant="rope", steps=5), corpus=data.load_path(text_dir), ckpt=tmp_path / "t.pt",
                     progress=False, device="cpu", time_limit=0.0)
    assert info["step"] == 1 and torch.load(tmp_path / "t.pt", weights_only=True)["step"] == 1


@pytest.mark.slow
def test_gpu_check_dry_run(tmp_path):
    """``scripts/gpu_check.sh --dry-run``: the 8 variants as concurrent CPU processes, results under $OUT."""
    env = {**os.environ, "OUT": str(tmp_path), "PY": sys.executable}
    r = subprocess.run(["bash", "scripts/gpu_check.sh", "--dry-run"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((tmp_path / "transformer_dry_run" / "summary.json").read_text())
    assert len(summary["rows"]) == 8 and all(row["steps"] == 10 for row in summary["rows"])


def test_eval_writes_after_training_and_after_each_length(text_dir, tmp_path):
    """``--eval --out``: the JSON is written after training and after every evaluated length (a wall-clock guard
    that stops the evaluation keeps the lengths it finished), and marked complete at the end."""
    from simulations.transformer.evaluate.extrapolation import evaluate_checkpoint
    from simulations.transformer.model.presets import Preset

    out = tmp_path / "run.json"
    _launch(1, ["--variant", "rope", "--preset", "smoke", "--steps", "2", "--data", str(text_dir),
                "--ckpt", str(tmp_path / "checkpoints" / "smoke" / "rope.pt"), "--eval"], out)
    done = json.loads(out.read_text())
    assert done["eval_complete"] is True and [r["multiple"] for r in done["eval"]] == [1, 2, 4]
    # the per-length hook sees the lengths in order, each time with every length so far
    ecfg = Preset.from_name("smoke", variant="rope").eval
    seen: list[list[int]] = []
    rows = evaluate_checkpoint(tmp_path / "checkpoints" / "smoke" / "rope.pt", ecfg, data.load_path(text_dir),
                               device="cpu", cache=False, on_rows=lambda rs: seen.append([r["multiple"] for r in rs]))
    assert seen == [[1], [1, 2], [1, 2, 4]] and [r["multiple"] for r in rows] == [1, 2, 4]


@pytest.mark.slow
def test_gpu_check_packs_only_with_out_and_smoke_refuses_without_cuda(tmp_path):
    """``--smoke`` without CUDA: every variant's line names the failure (no traceback, exit 0 for the script)."""
    if torch.cuda.is_available():
        pytest.skip("a GPU is available")
    env = {**os.environ, "PY": sys.executable, "VARIANTS": "rope path"}
    r = subprocess.run(["bash", "scripts/gpu_check.sh", "--smoke"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert [x["variant"] for x in lines] == ["rope", "path"]
    assert all(x["failed"] == "setup" and "CUDA" in x["error"] for x in lines)
