"""Bad checkpoint files: one line naming the option, exit 2, no traceback, no work done.

The loader (truncated at any offset, random bytes, bit flips, empty, text, foreign torch objects, wrong entry
types and shapes, non-finite weights, a mismatched configuration), the commands that read a checkpoint (eval,
train --resume with broken optimizer / RNG states, probe), the ``python -m`` entry points, and atomic writes
(a checkpoint write that fails half-way: a full disk). Helpers: ``_faults.py``; fixtures: ``conftest.py``.
"""

from __future__ import annotations

import errno
import io
import math
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from simulations.transformer.data import corpus as tdata  # noqa: E402
from simulations.transformer.evaluate.extrapolation import eval_cache_path  # noqa: E402
from simulations.transformer.model.presets import Preset  # noqa: E402
from simulations.transformer.paths import checkpoint_path  # noqa: E402
from simulations.transformer.train import checkpoints as fileio  # noqa: E402
from simulations.transformer.train.loop import load_model, train  # noqa: E402
from tests.transformer._faults import (  # noqa: E402
    FAST,
    ROOT,
    _assert_refused,
    _corpus,
    _one_line_refusal,
    _run,
    _saved,
    _write,
    refused_or_intact,
)

# ---------------------------------------------------------------------------------------------------------
# the loader: every corrupt or foreign file is one InvalidInput line, never another exception
# ---------------------------------------------------------------------------------------------------------


@FAST
@given(frac=st.floats(0, 1, exclude_max=True))
def test_truncated_at_any_offset_is_corrupt(frac, good_bytes, tmp_path):
    cut = int(frac * len(good_bytes))
    p = _write(tmp_path, good_bytes[:cut])
    msg = _one_line_refusal(lambda: load_model(p, "cpu"), "checkpoint:", str(p))
    assert "is corrupt" in msg or "is not a stylized checkpoint" in msg


@FAST
@given(content=st.binary(min_size=1, max_size=4096))
def test_random_bytes_are_refused(content, tmp_path):
    p = _write(tmp_path, content)
    _one_line_refusal(lambda: load_model(p, "cpu"), "checkpoint:")


@FAST
@given(positions=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=8))
def test_bit_flips_are_found_or_harmless(positions, good_bytes, good_ck, tmp_path):
    """A flipped bit anywhere is refused (the archive's CRC-32s) or leaves the weights exactly as saved."""
    b = bytearray(good_bytes)
    for f in positions:
        i = int(f * len(b))
        b[i] ^= 1 << (i % 8)
    refused_or_intact(_write(tmp_path, bytes(b)), good_ck)


def _foreign_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("notes.txt", "not a checkpoint")
    return buf.getvalue()


class _Opener:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _mutated(good_ck: dict, how: str) -> dict:
    ck = dict(good_ck)
    if how == "no-model":
        del ck["model"]
    elif how == "model-not-tensors":
        ck["model"] = {k: 1.0 for k in ck["model"]}
    elif how == "config-str":
        ck["model_config"] = "n_embd=32"
    elif how == "config-unknown-field":
        ck["model_config"] = {**ck["model_config"], "n_embdd": 3}
    elif how == "config-invalid":
        ck["model_config"] = {**ck["model_config"], "n_head": 0}
    elif how == "config-other-shape":
        ck["model_config"] = {**ck["model_config"], "n_embd": 64}
    elif how == "step-str":
        ck["step"] = "abc"
    elif how == "step-negative":
        ck["step"] = -1
    elif how == "step-bool":
        ck["step"] = True
    elif how == "variant-unknown":
        ck["variant"] = "../../x"
    elif how == "variant-mismatch":
        ck["variant"] = "alibi"
    elif how == "wrong-shape":
        k = next(iter(ck["model"]))
        ck["model"] = {**ck["model"], k: torch.zeros(3, 5)}
    elif how == "missing-tensor":
        ck["model"] = dict(list(ck["model"].items())[1:])
    elif how == "extra-tensor":
        ck["model"] = {**ck["model"], "blocks.9.attn.weight": torch.zeros(2)}
    elif how == "nan-weights":
        k = next(k for k, v in ck["model"].items() if v.is_floating_point() and v.ndim == 2)
        w = ck["model"][k].clone()
        w[0, 0] = float("nan")
        ck["model"] = {**ck["model"], k: w}
    elif how == "train-config-list":
        ck["train_config"] = [1]
    else:
        raise AssertionError(how)
    return ck


FOREIGN_OBJECTS = {"dict-not-ours": {"a": 1}, "tensor": torch.zeros(3), "list": [1, 2], "none": None, "int": 7,
                   "str": "model", "empty-dict": {}}
MUTATIONS = ("no-model", "model-not-tensors", "config-str", "config-unknown-field", "config-invalid",
             "config-other-shape", "step-str", "step-negative", "step-bool", "variant-unknown", "variant-mismatch",
             "wrong-shape", "missing-tensor", "extra-tensor", "nan-weights", "train-config-list")


@pytest.mark.parametrize("kind", ["empty", "text", "one-byte", "zip-magic-only", "foreign-zip", "pickle-magic"])
def test_not_torch_files(kind, tmp_path):
    content = {"empty": b"", "text": b"step: 3\nmodel: rope\n" * 10, "one-byte": b"P", "zip-magic-only": b"PK\x03\x04",
               "foreign-zip": _foreign_zip(), "pickle-magic": b"\x80\x02garbage"}[kind]
    p = _write(tmp_path, content)
    msg = _one_line_refusal(lambda: load_model(p, "cpu"), "checkpoint:", str(p))
    assert ("is corrupt" in msg) == (kind in ("empty", "zip-magic-only"))


@pytest.mark.parametrize("kind", sorted(FOREIGN_OBJECTS))
def test_foreign_torch_objects(kind, tmp_path):
    p = _saved(tmp_path, FOREIGN_OBJECTS[kind])
    _one_line_refusal(lambda: load_model(p, "cpu"), "is not a stylized checkpoint")


@pytest.mark.parametrize("how", MUTATIONS)
def test_wrong_entries_and_shapes(how, good_ck, tmp_path):
    p = _saved(tmp_path, _mutated(good_ck, how))
    msg = _one_line_refusal(lambda: load_model(p, "cpu"), "checkpoint:", str(p))
    assert ("is corrupt" in msg) == (how == "nan-weights"), msg


def test_a_pickled_callable_runs_nothing_and_is_named(tmp_path):
    marker = tmp_path / "pwned"
    for proto in (2, pickle.HIGHEST_PROTOCOL):
        p = _saved(tmp_path, {"model": _Opener(marker)}, f"evil{proto}.pt", pickle_protocol=proto)
        _one_line_refusal(lambda p=p: load_model(p, "cpu"), "is not a stylized checkpoint")
    assert not marker.exists()


def test_missing_folder_and_unreadable(tmp_path):
    _one_line_refusal(lambda: load_model(tmp_path / "nope.pt", "cpu"), "does not exist")
    _one_line_refusal(lambda: load_model(tmp_path, "cpu"), "is not a file")


# ---------------------------------------------------------------------------------------------------------
# the commands that read a checkpoint: eval, train --resume, probe
# ---------------------------------------------------------------------------------------------------------
def _bad_checkpoint(kind: str, good_bytes: bytes, good_ck: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "truncated":
        path.write_bytes(good_bytes[: len(good_bytes) // 3])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "random":
        path.write_bytes(np.random.default_rng(1).integers(0, 256, 3000, dtype=np.uint8).tobytes())
    elif kind == "text":
        path.write_text("this is not a checkpoint\n")
    elif kind == "bitflip":
        b = bytearray(good_bytes)
        b[len(b) // 2] ^= 0x10
        path.write_bytes(bytes(b))
    elif kind in FOREIGN_OBJECTS:
        torch.save(FOREIGN_OBJECTS[kind], path)
    else:
        torch.save(_mutated(good_ck, kind), path)


CLI_KINDS = ("truncated", "empty", "random", "text", "bitflip", "dict-not-ours", "tensor", "wrong-shape",
             "config-other-shape", "step-str")


@pytest.mark.parametrize("kind", CLI_KINDS)
@pytest.mark.parametrize("command", ["eval", "resume", "probe"])
def test_commands_refuse_bad_checkpoints(command, kind, good_bytes, good_ck, tmp_path, capsys):
    path = checkpoint_path("smoke", "rope", 0, tmp_path)
    _bad_checkpoint(kind, good_bytes, good_ck, path)
    before = path.read_bytes()
    argv = {"eval": ["transformer", "eval", "--variant", "rope", "--results-dir", str(tmp_path), "--threads", "1"],
            "resume": ["transformer", "train", "--variant", "rope", "--resume", "--steps", "3", "--results-dir",
                       str(tmp_path), "--threads", "1"],
            "probe": ["transformer", "probe", str(path), "--threads", "1"]}[command]
    rc, err, _ = _run(argv, capsys)
    _assert_refused(rc, err, "--resume:" if command == "resume" else "checkpoint:", str(path))
    assert path.read_bytes() == before  # nothing written over it
    assert not eval_cache_path(path).exists()


@pytest.mark.parametrize("how", ["no-optimizer", "optimizer-garbage", "optimizer-other-model", "rng-garbage",
                                 "rng-torch-short", "config-dropout", "history-garbage"])
def test_resume_checks_optimizer_rng_and_config(how, good_ck, tmp_path, capsys):
    ck = dict(good_ck)
    if how == "no-optimizer":
        del ck["optimizer"]
    elif how == "optimizer-garbage":
        ck["optimizer"] = {"state": {}, "param_groups": [{"params": [0]}]}
    elif how == "optimizer-other-model":
        st0 = ck["optimizer"]["state"]
        k = next(iter(st0))
        ck["optimizer"] = {**ck["optimizer"], "state": {**st0, k: {**st0[k], "exp_avg": torch.zeros(7, 3)}}}
    elif how == "rng-garbage":
        ck["rng"] = {"torch": torch.zeros(3, dtype=torch.uint8), "numpy": ("MT19937",), "python": (1,)}
    elif how == "rng-torch-short":
        ck["rng"] = {**ck["rng"], "torch": ck["rng"]["torch"][:10]}
    elif how == "config-dropout":
        ck["model_config"] = {**ck["model_config"], "dropout": 0.3}
    elif how == "history-garbage":
        ck["history"] = ["x"]
    path = checkpoint_path("smoke", "rope", 0, tmp_path)
    path.parent.mkdir(parents=True)
    torch.save(ck, path)
    rc, err, _ = _run(["transformer", "train", "--variant", "rope", "--resume", "--steps", "3", "--results-dir",
                       str(tmp_path), "--threads", "1"], capsys)
    _assert_refused(rc, err, "--resume:", str(path))
    assert torch.load(path, weights_only=True)["step"] == good_ck["step"]  # not trained, not overwritten


def test_resume_steps_below_the_checkpoint_names_steps(good, tmp_path, capsys):
    path = checkpoint_path("smoke", "rope", 0, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(good.read_bytes())
    rc, err, _ = _run(["transformer", "train", "--variant", "rope", "--resume", "--steps", "1", "--results-dir",
                       str(tmp_path), "--threads", "1"], capsys)
    assert rc == 0  # the checkpoint is at step 1 already: nothing to do
    ck = torch.load(path, weights_only=True)
    torch.save({**ck, "step": 5}, path)
    rc, err, _ = _run(["transformer", "train", "--variant", "rope", "--resume", "--steps", "2", "--results-dir",
                       str(tmp_path), "--threads", "1"], capsys)
    _assert_refused(rc, err, "--steps:")


def test_python_module_entry_point_prints_no_traceback(tmp_path):
    """``python -m simulations.transformer probe`` (its own ``main``) and ``python -m stylized``: one line."""
    p = _write(tmp_path, b"\x00garbage")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    for mod in ("simulations.transformer", "stylized"):
        argv = [sys.executable, "-m", mod, *([] if mod.startswith("sim") else ["transformer"]), "probe", str(p),
                "--threads", "1"]
        r = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        err = [x for x in r.stderr.splitlines() if x.strip()]
        assert r.returncode == 2 and len(err) == 1 and "Traceback" not in r.stderr, (mod, r.returncode, r.stderr)
        assert "is not a stylized checkpoint" in err[0]


def test_the_other_entry_points_print_one_line(good_bytes, tmp_path, monkeypatch, capsys):
    """``python -m simulations.transformer.train.distributed`` (torchrun) and ``… .data`` (cache building)."""
    from simulations.transformer.train import distributed

    bad = _write(tmp_path, good_bytes[:500])
    capsys.readouterr()
    rc = distributed.main(["--variant", "rope", "--preset", "smoke", "--ckpt", str(bad), "--resume", "--device", "cpu",
                           "--threads", "1"])
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert rc == 2 and len(err) == 1 and "--resume:" in err[0] and "is corrupt" in err[0], err
    with pytest.raises(SystemExit) as e:
        distributed.main(["--variant", "rope", "--threads=-1"])
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert e.value.code == 2 and len(err) == 1 and "--threads:" in err[0], err
    monkeypatch.setenv("STYLIZED_DATA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "owt").mkdir()
    (tmp_path / "owt" / "a.jsonl").write_text('{"text": 1}\n')
    assert tdata.main(["--data", f"owt:{tmp_path / 'owt'}"]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "a.jsonl line 1" in err[0], err


# ---------------------------------------------------------------------------------------------------------
# atomic checkpoint writes: a failed write leaves no partial or temporary file, the old checkpoint intact
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()])
def test_failed_checkpoint_write_leaves_no_tmp(failure, good, tmp_path, monkeypatch):
    path = tmp_path / "checkpoints" / "smoke" / "rope.pt"
    path.parent.mkdir(parents=True)
    path.write_bytes(good.read_bytes())
    before = path.read_bytes()
    real_save = torch.save

    def full_disk(obj, f, *a, **k):
        buf = io.BytesIO()
        real_save(obj, buf)
        Path(f).write_bytes(buf.getvalue()[:1000])  # half written, then the disk is full
        raise failure

    monkeypatch.setattr(fileio.torch, "save", full_disk)
    with pytest.raises(type(failure)):
        fileio.save_checkpoint(path, {"model": {}})
    assert sorted(p.name for p in path.parent.iterdir()) == ["rope.pt"]
    assert path.read_bytes() == before


def test_failed_write_during_training_leaves_no_tmp(tmp_path, monkeypatch):
    def full_disk(obj, f, *a, **k):
        Path(f).write_bytes(b"PK\x03\x04partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio.torch, "save", full_disk)
    with pytest.raises(OSError):
        train(Preset.from_name("smoke", variant="rope", steps=1), corpus=_corpus(), results_dir=tmp_path, progress=False,
              device="cpu")
    folder = tmp_path / "checkpoints" / "smoke"
    assert list(folder.iterdir()) == []


def test_good_checkpoint_round_trips(good, good_ck):
    model, ck = load_model(good, "cpu")
    assert ck["step"] == 1 and ck["variant"] == "rope"
    for k, v in model.state_dict().items():
        assert torch.equal(v, good_ck["model"][k])
    ck2 = fileio.read_checkpoint(good, resume=True)
    assert set(fileio.RESUME_KEYS) <= set(ck2)
    assert math.isfinite(float(ck2["history"][-1][1]))
