"""Regenerate a figure with your own parameters: C1's mixing figure for two families at d = 32.

Run: ``python docs/examples/regenerate_figure.py OUT_DIR`` (the docs build and the test suite run it).

1. From Python: ``stylized.run(NAME, **options)`` and ``Result.plot(path)``.
2. From the command line: ``stylized check NAME --option … --save --out DIR`` (an exploratory run: the result
   goes under ``DIR``, never over the committed ``simulations/results/`` and ``figures/``), then the check's
   figure drawn from that saved result.

Both give the same numbers (same options, same seed), and the committed figure is not touched.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

import stylized

ROOT = Path(__file__).resolve().parent.parent.parent

# Two families at d = 32, fewer chains and shorter routes than the paper's defaults (a few seconds).
OPTIONS = dict(family="householder,so2-uniform", d=32, n=[0, 1, 2, 5, 10, 20, 50], trials=1000,
               L=[64, 1024], window_steps=16384, d_op=8, n_op=[1, 2, 5, 10], trials_op=200)


def from_python(out: Path) -> stylized.Result:
    print(stylized.defaults("mixing")["d"], "is the default d; the options and ranges: stylized check mixing --help")
    r = stylized.run("mixing", **OPTIONS)
    print(r, r.headline["quantity"], r.headline["estimate"])
    r.plot(out / "mixing-d32.png")  # PNG and PDF beside it, in the shared theme (another suffix: that format alone)
    return r


def from_command_line(out: Path) -> dict:
    command = ("stylized check mixing --family householder,so2-uniform --d 32 --n 0,1,2,5,10,20,50 "
               "--trials 1000 --L 64,1024 --window-steps 16384 --d-op 8 --n-op 1,2,5,10 --trials-op 200")
    print("$", command, f"--save --quiet --out {out}/cli", flush=True)  # add --dry-run to only validate them
    subprocess.run([sys.executable, "-m", *shlex.split(command), "--save", "--quiet", "--out", f"{out}/cli"], check=True)
    # --out DIR: not the paper's defaults, so the result goes under DIR/results/runs/<name>-<hash>/.
    (saved,) = (out / "cli" / "results" / "runs").glob("mixing-*/mixing.json")
    result = json.loads(saved.read_text())
    # redraw its figure from that result alone (nothing rerun; the committed figure untouched): beside the JSON
    print("$ stylized figures --from", saved, flush=True)
    subprocess.run([sys.executable, "-m", "stylized", "figures", "--from", str(saved)], check=True)
    paths = sorted(saved.parent.glob("mixing*.p*"))
    print("saved result:", saved, "figures:", [str(p) for p in paths])
    return result


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    committed = [ROOT / "figures" / "mixing.png", ROOT / "simulations" / "results" / "mixing.json"]
    before = [digest(p) for p in committed]
    r = from_python(out)
    cli = from_command_line(out)
    same = cli["rows"] == json.loads(r.to_json())["rows"]
    print("Python and command line agree:", same)
    untouched = [digest(p) for p in committed] == before
    print("committed figure and result untouched:", untouched)
    return 0 if same and untouched and r.holds else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "figure_out")))
