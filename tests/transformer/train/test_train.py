"""Training, exact resume, evaluation at 4x, data loaders, compare and CLI on tiny inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from simulations.transformer import cli  # noqa: E402
from simulations.transformer.c6.compare import compare  # noqa: E402
from simulations.transformer.c6.plot import plot_compare  # noqa: E402
from simulations.transformer.data import corpus as data  # noqa: E402
from simulations.transformer.data import corpus_files  # noqa: E402
from simulations.transformer.evaluate.extrapolation import evaluate_checkpoint  # noqa: E402
from simulations.transformer.model.config import VARIANTS  # noqa: E402
from simulations.transformer.model.presets import Preset, TrainConfig  # noqa: E402
from simulations.transformer.train.loop import lr_at, train  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def corpus(text_dir):
    return data.load_path(text_dir)


def test_text_folder_loader(text_dir, corpus):
    files = corpus_files.text_files(text_dir)
    assert [f.name for f in files][:2] == ["f00.txt", "f02.txt"]  # sorted by relative path
    assert all(f.suffix == ".txt" for f in files)
    assert corpus.vocab_size == 256 and corpus.val.size > 0
    last = files[-1].read_bytes()
    assert corpus.val.tobytes().startswith(last)  # last 5% of files (1 of 20) held out
    single = data.load_path(files[0])
    assert single.train.size + single.val.size == files[0].stat().st_size + 2
    with pytest.raises(ValueError, match="data"):
        data.load_path(text_dir / "missing")


def test_builtin_loader_excludes_tests_and_site_packages(tmp_path):
    for rel in ["os.py", "json/__init__.py", "test/test_x.py", "site-packages/pkg.py",
                "unittest/tests/t.py", "json/decoder.py"]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# {rel}\n" * 50)
    names = [p.relative_to(tmp_path).as_posix() for p in corpus_files.stdlib_files(tmp_path)]
    assert names == ["json/__init__.py", "json/decoder.py", "os.py"]
    c = data.load_builtin(max_bytes=10**6, root=str(tmp_path))
    assert c.val.tobytes().startswith(b"# os.py")


def test_lr_schedule():
    cfg = TrainConfig(steps=100, lr=1.0, warmup=10, min_lr_frac=0.1)
    assert lr_at(0, cfg) == pytest.approx(0.1)
    assert lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(10, cfg) == pytest.approx(1.0)
    assert lr_at(99, cfg) == pytest.approx(0.1, abs=1e-3)


@pytest.mark.parametrize("variant", ["random-qkv", "learned-qkv"])
def test_resume_reproduces_next_losses(variant, corpus, tmp_path):
    config, kw = Preset.from_name("smoke", variant=variant, steps=6), dict(corpus=corpus, progress=False, device="cpu")
    full = train(config, ckpt=tmp_path / "full.pt", **kw)
    part = train(config, ckpt=tmp_path / "part.pt", stop_at=3, **kw)
    assert part["step"] == 3
    resumed = train(config, ckpt=tmp_path / "part.pt", resume=True, **kw)
    a = [loss for _, loss in full["history"]]
    b = [loss for _, loss in resumed["history"]]
    assert len(b) == 6 and b[:3] == a[:3]
    np.testing.assert_allclose(b[3:], a[3:], rtol=0, atol=1e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_train_and_eval_at_4x(variant, corpus, tmp_path):
    config = Preset.from_name("smoke", variant=variant, steps=2)
    info = train(config, corpus=corpus, ckpt=tmp_path / "m.pt", progress=False, device="cpu")
    ecfg = config.eval
    assert max(ecfg.multiples) >= 4
    rows = evaluate_checkpoint(info["checkpoint"], ecfg, corpus, device="cpu")
    assert [r["multiple"] for r in rows] == ecfg.multiples
    assert rows[0]["ratio"] == pytest.approx(1.0)
    for r in rows:
        assert np.isfinite(r["ppl"]) and r["ci_low"] <= r["ratio"] <= r["ci_high"]
        assert r["n_tokens"] == ecfg.n_windows * 16
    assert rows[-1]["n_beyond_tokens"] == ecfg.n_windows * (64 - 16)


def test_bad_train_config():
    with pytest.raises(ValueError, match="variant"):
        Preset.from_name("smoke", variant="xpos")
    with pytest.raises(ValueError, match="preset"):
        Preset.from_name("huge", variant="rope")
    with pytest.raises(ValueError, match="head_dim"):
        Preset.from_name("smoke", variant="rope", n_embd=30, n_head=2)


def test_cli_bad_config_exits_2(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["train", "--variant", "bogus", "--preset", "smoke"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "variant" in err[0] and "rope" in err[0]
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", "--preset", "tpu"])
    assert e.value.code == 2


def test_cli_add_parser_sets_func():
    import argparse

    parser = argparse.ArgumentParser(prog="stylized")
    sub = parser.add_subparsers(dest="cmd")
    cli.add_parser(sub)
    args = parser.parse_args(["transformer", "train", "--variant", "rope", "--resume"])
    assert callable(args.func) and args.resume and args.preset == "smoke"


def test_compare_writes_contract(text_dir, tmp_path, capsys):
    out = tmp_path / "res"
    fig = tmp_path / "fig.png"
    rc = cli.main(["compare", "--preset", "smoke", "--variants", "rope,random-qk,random-qkv,alibi",
                   "--steps", "3", "--data", str(text_dir), "--results-dir", str(out),
                   "--figure", str(fig), "--seeds", "0,1"])
    assert rc == 0
    res = json.loads((out / "smoke_compare.json").read_text())
    assert res["claim"] == "transformer-compare"
    assert set(res) >= {"claim", "params", "holds", "rows", "seconds", "verdicts", "per_seed"}
    assert res["holds"] in (True, False, None)
    rows = {r["row"]: r for r in res["verdicts"]["all"]["rows"]}
    assert rows["rope > random-qk"]["verdict"] in ("agrees", "contradicts", "undecided")
    assert rows["rope > random-qk"]["seeds_a"] == 2 and rows["rope > learned-qk"]["verdict"] == "not run"
    row = res["rows"][1]
    assert set(row) >= {"variant", "metric", "multiple", "estimate", "per_seed", "theory", "seeds", "ppl"}
    rope2 = [r for r in res["rows"] if r["variant"] == "rope" and r["multiple"] == 2 and r["metric"] == "all"][0]
    assert rope2["theory"] == 1.82 and rope2["seeds"] == 2
    assert (out / "smoke_compare.csv").read_text().startswith("variant,L,multiple")
    assert not res["canonical"]
    assert fig.stat().st_size > 1000
    # second run: checkpoints are complete, nothing retrained; figure regenerates alone
    assert (out / "checkpoints" / "smoke" / "rope.pt").exists()
    plot_compare(out / "smoke_compare.json", tmp_path / "again.png")
    assert (tmp_path / "again.png").exists()
    res2 = compare("smoke", ["rope"], steps=3, data=str(text_dir), results_dir=out,
                   figure=fig, progress=False, device="cpu")
    assert res2["params"]["timings"]["rope/s0"]["train_s"] < 5


def test_compare_with_two_workers_matches_one(text_dir, tmp_path):
    """Jobs in worker processes (one thread each) give the same checkpoints and numbers as in-process."""
    kw = dict(steps=3, data=str(text_dir), progress=False, device="cpu", seeds=[0], extra_seeds=[0])
    one = compare("smoke", ["rope", "random-qk"], results_dir=tmp_path / "a", figure=tmp_path / "a.png", **kw)
    two = compare("smoke", ["rope", "random-qk"], results_dir=tmp_path / "b", figure=tmp_path / "b.png", workers=2, **kw)
    assert [r["estimate"] for r in one["rows"]] == [r["estimate"] for r in two["rows"]]

