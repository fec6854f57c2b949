"""Destinations that cannot be written and options that do not fit together, fuzzed (``make fuzz``; the fast
cases are in ``test_file_faults_options``): every command that writes, given a results folder / figure / scratch
folder under a regular file, in ``/proc`` or ``/sys``, with a name too long, on a read-only or a full file system
(a real tmpfs where this process may mount one, else skipped); every pair of options valid alone and refused
together. Contract: exit 2, one line naming the option(s), before any work. Counted like ``test_fuzz_cli``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from simulations.transformer.model.config import VARIANTS  # noqa: E402
from simulations.transformer.paths import checkpoint_path, results_root  # noqa: E402
from stylized.cli import app as stylized_cli  # noqa: E402
from tests._shared import report_fuzz  # noqa: E402
from tests.transformer import _faults  # noqa: E402
from tests.transformer._faults import _assert_refused, _run, counted, slow  # noqa: E402
from tests.transformer.test_file_faults_options import DEST_COMMANDS  # noqa: E402

pytestmark = pytest.mark.slow
NAME = st.text(st.sampled_from("abcXYZ019-_. é"), min_size=1, max_size=12).filter(lambda s: s not in (".", ".."))
_build = stylized_cli.build_parser
_PARSERS: dict = {}


@pytest.fixture(autouse=True)
def _fast_parser(monkeypatch):
    """One parser per set of arguments, as in ``test_fuzz_cli`` (building one costs ~0.1 s)."""
    def cached(*a, **k):
        key = repr((a, sorted(k.items())))
        if key not in _PARSERS:
            _PARSERS[key] = _build(*a, **k)
        return _PARSERS[key]

    monkeypatch.setattr(stylized_cli, "build_parser", cached)


def _mount(where: Path, size: str, ro: bool = False, fill_from: Path | None = None) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True).returncode:
        return False
    if fill_from is not None:
        ck = checkpoint_path("smoke", "rope", 0, where)
        ck.parent.mkdir(parents=True)
        ck.write_bytes(fill_from.read_bytes())
    if ro:
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
    return True


@pytest.fixture(scope="module")
def filesystems(good, tmp_path_factory):
    """``{"ro": a read-only tmpfs holding a good checkpoint, "full": a tmpfs with 8 KiB free}`` (those this
    process may mount)."""
    root = tmp_path_factory.mktemp("fs")
    out: dict[str, Path] = {}
    if shutil.which("mount") and _mount(root / "ro", "1m", ro=True, fill_from=good):
        out["ro"] = root / "ro"
    if shutil.which("mount") and _mount(root / "full", "64k"):
        out["full"] = root / "full"
    yield out
    for p in out.values():
        subprocess.run(["umount", str(p)], capture_output=True)


WHERES = ["file-in-the-way", "proc", "sys", "too-long", "ro", "full"]


def _destination(where: str, root: Path, names: list[str], fs: dict) -> str | None:
    if where == "file-in-the-way":
        blocker = root / names[0]
        blocker.write_text("x")
        return str(blocker.joinpath(*names[1:], "r"))
    if where == "proc":
        return str(Path("/proc/self/stylized-nope", *names))
    if where == "sys":
        return str(Path("/sys/stylized-nope", *names))
    if where == "too-long":
        return str(root / ("n" * (256 + 7 * len(names))) / names[0])
    return str(fs[where].joinpath(*names[1:])) if where in fs else None


def _dest_case(argv: list[str], flag: str, root: Path, capsys) -> None:
    before = set(root.rglob("*.pt"))
    rc, err, _ = _run(argv, capsys)
    _assert_refused(rc, err, f"{flag}:")
    assert not list(root.rglob("*.tmp")) and set(root.rglob("*.pt")) == before  # nothing made


@slow("destinations")
@given(name=st.sampled_from(sorted(DEST_COMMANDS) + ["spot-check", "figure-compare", "figure-bridge"]),
       where=st.sampled_from(WHERES), names=st.lists(NAME, min_size=1, max_size=3))
def test_slow_unwritable_destinations(name, where, names, filesystems, good, tmp_path, capsys):
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    try:
        if name == "eval" and where not in ("ro", "full"):
            ck = checkpoint_path("smoke", "rope", 0, root / "r")  # readable checkpoint, unwritable cache folder
            ck.parent.mkdir(parents=True)
            ck.write_bytes(good.read_bytes())
            (root / "r" / "eval").write_text("a file where the cache folder goes")
            dest, where = str(root / "r"), "file-in-the-way"
        else:
            dest = _destination(where, root, names, filesystems)
        if dest is None or (where == "full" and name not in ("train", "compare-dir", "combined")):
            return  # no such file system here; a full disk is found before work only where a checkpoint is made
        if where == "ro" and name == "eval":
            dest = str(filesystems["ro"])
        if name.startswith("figure-"):
            argv = {"figure-compare": ["transformer", "compare", "--variants", "nope", "--seeds", "0", "--steps", "2"],
                    "figure-bridge": ["transformer", "bridge", "--preset", "smoke"]}[name]
            argv, flag = [*argv, "--results-dir", str(root / "new"), "--figure", str(Path(dest) / "f.png")], "--figure"
        elif name == "spot-check":
            argv, flag = ["spot-check", "--scratch", dest], "--scratch"
        else:
            argv, flag = DEST_COMMANDS[name]
            argv = [*argv, "--results-dir", dest]
        counted("destinations", _dest_case, [*argv, "--threads", "1"], flag, root, capsys)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------
# options valid alone, refused together: one line naming both, exit 2, before any work
# ---------------------------------------------------------------------------------------------------------
def _committed(variant: str, seed: int) -> bool:
    return (results_root() / "eval" / "cpu" / f"{variant}{'' if seed == 0 else f'-s{seed}'}.json").exists()


def _contradiction(kind: str, data, good: Path, root: Path) -> tuple[list[str], tuple[str, ...]] | None:
    r = ["--results-dir", str(root), "--threads", "1"]
    if kind == "bpe-vocab-bytes":
        cmd = data.draw(st.sampled_from(["train", "compare"]))
        vocab = str(data.draw(st.integers(257, 10**6)))
        tok = data.draw(st.sampled_from([["--tokenizer", "bytes"], []]))  # bytes: given, or the smoke preset's
        head = ["transformer", "train", "--variant", data.draw(st.sampled_from(VARIANTS))] if cmd == "train" else \
            ["transformer", "compare", "--variants", "nope", "--seeds", "0"]
        return [*head, *tok, "--bpe-vocab", vocab, "--steps", "1", *r], ("--bpe-vocab", "--tokenizer")
    if kind == "probe-D-lengths":
        lengths = data.draw(st.lists(st.integers(1, 64), min_size=1, max_size=4))
        D = data.draw(st.integers(16 * max(lengths), 10**7))  # lengths are multiples of L_train = 16 (smoke)
        return (["transformer", "probe", str(good), "--lengths", ",".join(map(str, lengths)), "--D", str(D),
                 "--threads", "1"], ("--D",))
    variant, seed = data.draw(st.sampled_from(VARIANTS)), data.draw(st.integers(0, 2**32 - 1) | st.integers(0, 6))
    if kind == "spot-check-run":
        if _committed(variant, seed):
            return None  # a committed run: it would retrain it (minutes)
        return ["spot-check", "--variant", variant, "--seed", str(seed), "--scratch", str(root / "s")], \
            ("--variant", "--seed")
    preset = data.draw(st.sampled_from(["smoke", "gpu", "paper"]))  # no committed run at these presets
    return ["spot-check", "--preset", preset, "--variant", variant, "--seed", str(seed), "--scratch",
            str(root / "s")], ("--preset",)


def _contradiction_case(argv: list[str], names: tuple[str, ...], root: Path, capsys) -> None:
    rc, err, out = _run(argv, capsys)
    _assert_refused(rc, err, *names)
    assert not list(root.rglob("*.pt")) and not (root / "s").exists()  # before any work


@slow("contradictions")
@given(data=st.data(), kind=st.sampled_from(["bpe-vocab-bytes", "probe-D-lengths", "spot-check-run",
                                              "spot-check-preset"]))
def test_slow_options_that_do_not_fit_together(data, kind, good, tmp_path, capsys):
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    try:
        case = _contradiction(kind, data, good, root)
        if case is not None:
            counted("contradictions", _contradiction_case, *case, root, capsys)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_resume_with_force_is_refused(tmp_path, capsys):
    argv = ["transformer", "train", "--variant", "rope", "--steps", "1", "--resume", "--force", "--results-dir",
            str(tmp_path), "--threads", "1"]
    counted("contradictions", _contradiction_case, argv, ("--resume", "--force"), tmp_path, capsys)


def teardown_module(module) -> None:
    kinds = ("destinations", "contradictions")
    report_fuzz("file faults: destinations and options", {k: v for k, v in _faults.TRIED.items() if k in kinds},
                {k: v for k, v in _faults.FAILED.items() if k in kinds})
