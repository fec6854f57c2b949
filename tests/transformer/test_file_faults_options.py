"""Bad option values and destinations: one line naming the option, exit 2, no traceback, before any work.

Every transformer sub-command's numbers and choices; results folders, figures and scratch folders that cannot
be written (found before training; the probe leaves nothing behind). Helpers: ``_faults.py``; fixtures:
``conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from simulations.transformer.paths import checkpoint_path  # noqa: E402
from simulations.transformer.train import checkpoints as fileio  # noqa: E402
from tests.transformer._faults import _assert_refused, _run  # noqa: E402

# ---------------------------------------------------------------------------------------------------------
# options: every transformer sub-command's numbers and choices, one line naming the option, before any work
# ---------------------------------------------------------------------------------------------------------
BAD_OPTIONS = [
    (["transformer", "bridge", "--threads=-1"], "--threads"),
    (["transformer", "bridge", "--threads", "x"], "--threads"),
    (["transformer", "bridge", "--preset", "../../x"], "--preset"),
    (["transformer", "combined", "--threads=-1"], "--threads"),
    (["transformer", "combined", "--workers", "0"], "--workers"),
    (["transformer", "combined", "--steps", "0"], "--steps"),
    (["transformer", "combined", "--steps", "1.5"], "--steps"),
    (["transformer", "combined", "--seeds=-1"], "--seeds"),
    (["transformer", "combined", "--seeds", "0,,1"], "--seeds"),
    (["transformer", "combined", "--variants", "rope"], "--variants"),
    (["transformer", "combined", "--preset", "nope"], "--preset"),
    (["transformer", "probe", "X", "--threads=-1"], "--threads"),
    (["transformer", "probe", "X", "--queries", "0"], "--queries"),
    (["transformer", "probe", "X", "--D", "0"], "--D"),
    (["transformer", "probe", "X", "--D=-3"], "--D"),
    (["transformer", "probe", "X", "--windows", "0"], "--windows"),
    (["transformer", "probe", "X", "--lengths", "0"], "--lengths"),
    (["transformer", "probe", "X", "--lengths", "1,a"], "--lengths"),
    (["transformer", "probe", "X", "--seed=-1"], "--seed"),
    (["transformer", "probe", "X", "--seed", "nan"], "--seed"),
    (["transformer", "train", "--variant", "rope", "--tokenizer", "words"], "--tokenizer"),
    (["transformer", "train", "--variant", "rope", "--steps", "inf"], "--steps"),
    (["transformer", "eval", "--variant", "nope2"], "--variant"),
    (["transformer", "compare", "--tokenizer", "x"], "--tokenizer"),
    (["spot-check", "--preset", "../../x"], "--preset"),
    (["spot-check", "--seed=-1"], "--seed"),
    (["spot-check", "--threads=-1"], "--threads"),
    (["spot-check", "--variant", "../rope"], "--variant"),
]


@pytest.mark.parametrize("argv,flag", BAD_OPTIONS, ids=[" ".join(a[1:]) for a, _ in BAD_OPTIONS])
def test_bad_option_values_name_the_option(argv, flag, capsys):
    rc, err, out = _run(argv, capsys)
    _assert_refused(rc, err, f"{flag}:")
    assert "must be" in err[0] and not out


@pytest.mark.parametrize("extra,flag", [(["--D", "1024"], "--D"), (["--D", "64", "--lengths", "1,4"], "--D"),
                                        (["--lengths", "1", "--D", "16"], "--D")])
def test_probe_without_a_far_source_is_refused(extra, flag, good, capsys):
    """``ρ_D`` is undefined when D reaches the longest length: refused, not printed as NaN with exit 0."""
    rc, err, out = _run(["transformer", "probe", str(good), "--threads", "1", *extra], capsys)
    _assert_refused(rc, err, f"{flag}:", "below the longest probed length")


def test_probe_prints_no_nan(good, capsys):
    rc, err, out = _run(["transformer", "probe", str(good), "--threads", "1", "--lengths", "1,2", "--queries", "1",
                         "--windows", "1"], capsys)
    assert rc == 0 and "nan" not in out.lower() and "n/a" in out  # L = D: no far source, shown as n/a


# ---------------------------------------------------------------------------------------------------------
# destinations: found before training
# ---------------------------------------------------------------------------------------------------------
def _unwritable(tmp_path: Path) -> dict[str, str]:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = {"file-in-the-way": str(blocker / "sub")}
    if Path("/proc/self").is_dir():
        out["proc"] = "/proc/stylized-nope"
    return out


DEST_COMMANDS = {
    "train": (["transformer", "train", "--variant", "rope", "--steps", "2"], "--results-dir"),
    "eval": (["transformer", "eval", "--variant", "rope"], "--results-dir"),
    "compare-dir": (["transformer", "compare", "--variants", "nope", "--seeds", "0", "--steps", "2"], "--results-dir"),
    "combined": (["transformer", "combined", "--preset", "smoke", "--variants", "alibi", "--seeds", "0", "--steps", "2"],
                 "--results-dir"),
    "far-context": (["transformer", "far-context", "--preset", "smoke", "--variants", "nope"], "--results-dir"),
    "passkey": (["transformer", "passkey", "--preset", "smoke", "--variants", "nope"], "--results-dir"),
    "bridge": (["transformer", "bridge", "--preset", "smoke"], "--results-dir"),
}


@pytest.mark.parametrize("where", ["file-in-the-way", "proc"])
@pytest.mark.parametrize("name", sorted(DEST_COMMANDS))
def test_unwritable_results_dir_is_found_before_work(name, where, good, tmp_path, capsys):
    dests = _unwritable(tmp_path)
    if where not in dests:
        pytest.skip("no /proc here")
    if name == "eval" and where != "file-in-the-way":
        pytest.skip("eval's results folder holds its checkpoint: one case")
    argv, flag = DEST_COMMANDS[name]
    if name == "eval":  # the checkpoint is readable, its cache folder is not writable
        ck = checkpoint_path("smoke", "rope", 0, tmp_path / "ro")
        ck.parent.mkdir(parents=True)
        ck.write_bytes(good.read_bytes())
        (tmp_path / "ro" / "eval").write_text("a file where the cache folder goes")
        argv = [*argv, "--results-dir", str(tmp_path / "ro")]
    else:
        argv = [*argv, "--results-dir", dests[where]]
    rc, err, _ = _run([*argv, "--threads", "1"], capsys)
    _assert_refused(rc, err, f"{flag}:", "not writable")
    assert not list(tmp_path.rglob("*.pt.*")) and not list(tmp_path.rglob(".stylized-probe*"))


@pytest.mark.parametrize("command", ["compare", "bridge"])
@pytest.mark.parametrize("where", ["under-a-file", "a-folder", "proc"])
def test_unwritable_figure_is_found_before_work(command, where, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    figure = {"under-a-file": str(blocker / "fig.png"), "a-folder": str(tmp_path), "proc": "/proc/stylized.png"}[where]
    if where == "proc" and not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    argv = {"compare": ["transformer", "compare", "--variants", "nope", "--seeds", "0", "--steps", "2"],
            "bridge": ["transformer", "bridge", "--preset", "smoke"]}[command]
    new_root = tmp_path / "new" / "deep"
    rc, err, _ = _run([*argv, "--results-dir", str(new_root), "--figure", figure, "--threads", "1"], capsys)
    _assert_refused(rc, err, "--figure:")
    assert not (tmp_path / "new").exists()  # the probe removed the folders it made


def test_spot_check_scratch_is_probed(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    rc, err, _ = _run(["spot-check", "--scratch", str(tmp_path / "f" / "s"), "--threads", "1"], capsys)
    _assert_refused(rc, err, "--scratch:", "not writable")


def test_concurrent_probes_of_one_new_folder_all_pass(tmp_path):
    """Concurrent runs probe the same new folders (and remove the ones they made): none is refused."""
    from concurrent.futures import ThreadPoolExecutor

    for i in range(20):
        target = tmp_path / f"r{i}" / "checkpoints" / "smoke"
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda _, t=target: fileio.check_dir(t, "--results-dir"), range(8)))
    assert not list(tmp_path.rglob(".stylized-probe*"))


def test_check_dir_leaves_nothing_behind(tmp_path):
    fileio.check_dir(tmp_path / "a" / "b" / "c", "--results-dir")
    assert list(tmp_path.iterdir()) == []
    fileio.check_figure(tmp_path / "x" / "fig.png")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------------------
# regressions found by the slow fuzz (test_file_faults_slow*): each a one-line refusal naming the option
# ---------------------------------------------------------------------------------------------------------
def test_figure_with_a_name_too_long_is_refused(tmp_path, capsys):
    """``Path.is_dir`` raised ENAMETOOLONG: an internal error (exit 3) instead of a refusal naming --figure."""
    figure = tmp_path / ("n" * 300) / "f.png"
    rc, err, _ = _run(["transformer", "compare", "--variants", "nope", "--seeds", "0", "--steps", "2", "--results-dir",
                       str(tmp_path / "r"), "--figure", str(figure), "--threads", "1"], capsys)
    _assert_refused(rc, err, "--figure:", "cannot be written")


@pytest.mark.parametrize("argv", [["train", "--variant", "rope", "--tokenizer", "bytes"], ["train", "--variant", "nope"],
                                  ["compare", "--variants", "nope", "--seeds", "0", "--tokenizer", "bytes"]])
def test_bpe_vocab_without_bpe_is_refused(argv, tmp_path, capsys):
    """``--bpe-vocab`` with the bytes tokenizer (given, or the preset's) was accepted and ignored."""
    rc, err, _ = _run(["transformer", *argv, "--bpe-vocab", "300", "--steps", "1", "--results-dir", str(tmp_path),
                       "--threads", "1"], capsys)
    _assert_refused(rc, err, "--bpe-vocab", "--tokenizer")
    assert not list(tmp_path.rglob("*.pt"))


@pytest.mark.parametrize("extra,names", [(["--variant", "fox", "--seed", "3"], ("--variant", "--seed")),
                                         (["--seed", "4000000000"], ("--variant", "--seed")),
                                         (["--preset", "smoke"], ("--preset",))])
def test_spot_check_without_a_committed_run_names_the_options(extra, names, tmp_path, capsys):
    """A (variant, seed, preset) with no committed run: exit 2 named a file, not the options."""
    rc, err, _ = _run(["spot-check", *extra, "--scratch", str(tmp_path / "s")], capsys)
    _assert_refused(rc, err, *names)
    assert not (tmp_path / "s").exists()


def test_too_little_space_for_the_checkpoint_is_found_before_training(tmp_path, monkeypatch, capsys):
    """A full disk was found by the checkpoint write after training (torch's RuntimeError: exit 3)."""
    monkeypatch.setattr(fileio, "_free_bytes", lambda d: 4096)
    rc, err, _ = _run(["transformer", "train", "--variant", "rope", "--steps", "1", "--results-dir", str(tmp_path),
                       "--threads", "1"], capsys)
    _assert_refused(rc, err, "--results-dir:", "bytes free")
    assert not list(tmp_path.rglob("*.pt")) and not list(tmp_path.rglob("*.tmp"))


def test_torch_write_failure_is_an_oserror_and_leaves_nothing(tmp_path, monkeypatch):
    """torch.save on a full disk raises RuntimeError ('unexpected pos'): now an OSError, the temporary removed."""
    import errno

    def full(obj, f, *a, **k):
        Path(f).write_bytes(b"PK\x03\x04")
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0")

    monkeypatch.setattr(fileio.torch, "save", full)
    monkeypatch.setattr(fileio, "_free_bytes", lambda d: 0)
    with pytest.raises(OSError) as e:
        fileio.save_checkpoint(tmp_path / "rope.pt", {"model": {}})
    assert e.value.errno == errno.ENOSPC and "rope.pt" in str(e.value)
    assert list(tmp_path.iterdir()) == []
