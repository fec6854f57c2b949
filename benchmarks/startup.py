"""Start-up rows of ``stylized bench``: ``--version``, ``--help`` and ``check --list`` wall time in fresh processes.

Each command runs ``repeat`` times in a new interpreter (``python -m stylized …``, output discarded), alternating
with ``python -c pass`` so both see the same load; medians are reported against the goals of issue 38
(``--version``/``--help`` ≤ 0.3 s, ``check --list`` ≤ 0.6 s idle, without importing torch: the row says whether
``check --list`` imported it).
"""

from __future__ import annotations

import os
import subprocess
import sys

from .timing import timed_pair

__all__ = ["bench_rows", "GOALS"]

GOALS = {("--version",): 0.3, ("--help",): 0.3, ("check", "--list"): 0.6}
"""Wall-time goal of each command, seconds (on an idle machine)."""


def _run(args: list[str]) -> None:
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=os.environ.copy())


def list_imports_torch() -> bool:
    """Whether ``stylized check --list`` imports torch (in a fresh interpreter)."""
    code = ("import contextlib, io, sys\nfrom stylized.cli.app import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['check', '--list'])\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1] == "True"


def bench_rows(repeat: int) -> list[dict]:
    rows = []
    torch = list_imports_torch()
    for argv, goal in GOALS.items():
        ours, base = timed_pair(lambda argv=argv: _run([sys.executable, "-m", "stylized", *argv]),
                                lambda: _run([sys.executable, "-c", "pass"]), repeat)
        note = f" (torch imported: {'yes' if torch else 'no'})" if argv[0] == "check" else ""
        rows.append({"name": f"stylized {' '.join(argv)}{note}", "kind": "end-to-end",
                     "baseline": "python -c pass", "seconds": ours, "baseline_seconds": base, "ratio": base / ours,
                     "peak_mib": None, "goal": f"≤ {goal} s wall (idle)" + (", no torch" if note else ""),
                     "goal_met": ours <= goal and not (note and torch)})
    return rows
