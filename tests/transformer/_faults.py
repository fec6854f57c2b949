"""Helpers shared by the ``test_file_faults_*`` modules (bad files and bad destinations: one line naming the
option, exit 2, no traceback, no work done); the fixtures ``good`` / ``good_bytes`` / ``good_ck`` (a real tiny
checkpoint) are in ``conftest.py``.

Generated faults (Hypothesis and parametrised): checkpoints truncated at any offset, random bytes, bit
flips, empty, text, foreign torch objects (a dict that is not ours, a bare tensor, a list), wrong entry
types, wrong shapes, non-finite weights, a mismatched configuration, broken optimizer / RNG states
(``test_file_faults_checkpoints``); evaluation caches that are not objects or hold garbage losses (a handled
miss: recomputed, one line; ``test_file_faults_caches``); OpenWebText jsonl records without a ``text`` string,
parquet without pyarrow, a corpus shorter than one block (``test_file_faults_corpora``); bad option values and
destinations that cannot be written (``test_file_faults_options``); a checkpoint write that fails half-way (a
full disk; ``test_file_faults_checkpoints``).

The commands run in-process through ``stylized.cli.app.main`` (what ``stylized transformer …`` runs), one
torch thread; nothing trains: every check fires before the first step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, settings  # noqa: E402

from simulations.transformer.data.corpus import Corpus  # noqa: E402
from stylized import InvalidInput  # noqa: E402
from stylized.cli import app as stylized_cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _corpus(n: int = 6000) -> Corpus:
    rng = np.random.default_rng(0)
    return Corpus(rng.integers(0, 256, n).astype(np.uint8), rng.integers(0, 256, n // 4).astype(np.uint8), 256,
                  "synthetic bytes")


def _run(argv: list[str], capsys) -> tuple[int, list[str], str]:
    """``stylized …`` in-process: (exit status, stderr lines, stdout)."""
    capsys.readouterr()
    try:
        rc = stylized_cli.main(argv)
    except SystemExit as e:
        rc = e.code
    out = capsys.readouterr()
    return rc, [x for x in out.err.splitlines() if x.strip()], out.out


def _assert_refused(rc, err: list[str], *names: str) -> None:
    assert rc == 2, (rc, err)
    assert len(err) == 1, err
    assert "Traceback" not in err[0] and "internal error" not in err[0], err
    for n in names:
        assert n in err[0], (n, err[0])


def _one_line_refusal(fn, *names: str) -> str:
    with pytest.raises(InvalidInput) as e:
        fn()
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 600, msg
    for n in names:
        assert n in msg, (n, msg)
    return msg


def _write(tmp_path: Path, content: bytes, name: str = "rope.pt") -> Path:
    p = tmp_path / name
    p.write_bytes(content)
    return p


def _saved(tmp_path: Path, obj, name: str = "rope.pt", **kw) -> Path:
    p = tmp_path / name
    torch.save(obj, p, **kw)
    return p


# ---------------------------------------------------------------------------------------------------------
# the slow, scaled variants (``make fuzz``): ``$STYLIZED_FUZZ_EXAMPLES`` inputs (default 10,000) split over the
# fault kinds by SHARE; every input is counted in TRIED and a hard failure (any escape: an assertion of the
# contract, another exception, a hang past HANG_S) in FAILED, reported like ``tests/cli/test_fuzz_cli.py``
# ---------------------------------------------------------------------------------------------------------
import collections  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402

from hypothesis import HealthCheck as _HC  # noqa: E402

FUZZ_N = int(os.environ.get("STYLIZED_FUZZ_EXAMPLES", 10_000))
# shares sum to 1.06: the destinations and contradictions skip the few draws that do not apply here (a file
# system this process may not mount, a committed run that would be retrained), so the total stays ≥ N
SHARE = {"checkpoint bytes": .08, "checkpoint truncated": .08, "checkpoint bit flips": .08,
         "checkpoint entries": .10, "commands x checkpoints": .15, "cache text": .08, "cache garbage": .10,
         "corpus jsonl": .10, "corpus text": .06, "destinations": .13, "contradictions": .10}
TRIED: collections.Counter = collections.Counter()
FAILED: collections.Counter = collections.Counter()
HANG_S = 120


def slow(kind: str) -> settings:
    """Hypothesis settings of the slow variant of ``kind``: its share of ``$STYLIZED_FUZZ_EXAMPLES``."""
    return settings(max_examples=max(1, round(FUZZ_N * SHARE[kind])), deadline=None,
                    suppress_health_check=list(_HC))


def _hang(signum, frame):
    raise TimeoutError(f"hang: no answer in {HANG_S} s")


def counted(kind: str, fn, *args, **kw):
    """Run one fuzz input of ``kind``: counted in TRIED, and in FAILED when it escapes the contract."""
    TRIED[kind] += 1
    old = signal.signal(signal.SIGALRM, _hang)
    signal.alarm(HANG_S)
    try:
        return fn(*args, **kw)
    except BaseException:
        FAILED[kind] += 1
        raise
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def refused_or_none(fn, *names: str):
    """``fn()``'s value, or ``None`` when it refuses with one :class:`InvalidInput` line naming ``names``;
    any other exception escapes (a hard failure)."""
    try:
        return fn()
    except InvalidInput as e:
        msg = str(e)
        assert "\n" not in msg and len(msg) < 600, msg
        for n in names:
            assert n in msg, (n, msg)
        return None


def refused_or_intact(p: Path, good_ck: dict) -> None:
    """A damaged checkpoint is refused in one line, or loads with the weights exactly as saved (a harmless change)."""
    from simulations.transformer.train.loop import load_model

    try:
        model, _ = load_model(p, "cpu")
    except InvalidInput as e:
        assert "\n" not in str(e)
        return
    for k, v in model.state_dict().items():
        assert torch.equal(v, good_ck["model"][k]), k
