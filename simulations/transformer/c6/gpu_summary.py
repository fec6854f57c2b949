"""The table of one gpu-preset seed folder: ``summary.json`` and ``summary.md`` from every ``<variant>.json`` in it.

``scripts/gpu_check.sh`` calls it after its runs; several device calls may write one seed's folder (a warm machine
keeps it), so the table is rebuilt from every run the folder holds, not only the last call's.  The gpu report
(:mod:`.gpu_report`) reads ``summary.json``.

    python -m simulations.transformer.c6.gpu_summary FOLDER PRESET [VARIANT ...]

A named ``VARIANT`` without its JSON is listed as failed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["summarize_folder"]

ORDER = ("rope", "nope", "alibi", "random-qk", "random-qkv", "learned-qk", "learned-qkv", "path")
METRIC_NAMES = (("ratio_all", "the author's metric (mean loss over the whole length-L window)"),
                ("ratio", "the target metric (the same last L_train tokens at every length)"))


def _runs(folder: Path) -> dict[str, dict]:
    runs = {}
    for f in sorted(folder.glob("*.json")):
        if f.name.startswith(("smoke-", "summary")):
            continue
        try:
            d = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and "step" in d and "history" in d:
            runs[f.stem] = d
    return runs


def summarize_folder(folder: str | Path, preset: str, variants: list[str] | tuple[str, ...] = ()) -> dict:
    """Write ``summary.json`` and ``summary.md`` of ``folder``; return the JSON's content."""
    folder = Path(folder)
    runs = _runs(folder)
    names = sorted(set(runs) | set(variants), key=lambda v: (ORDER.index(v) if v in ORDER else len(ORDER), v))
    rows = [{"variant": v, "steps": d["step"], "train_s": round(d["seconds"], 1),
             "final_loss": d["history"][-1][1] if d["history"] else None, "eval": d.get("eval", []),
             "eval_complete": d.get("eval_complete", True)} for v, d in ((v, runs[v]) for v in names if v in runs)]
    mults = sorted({r["multiple"] for d in runs.values() for r in d.get("eval", [])})
    length = {r["multiple"]: r["L"] for d in runs.values() for r in d.get("eval", [])}
    md = [f"# transformer comparison, preset {preset}: PPL(L)/PPL(L_train) per variant", ""]
    for key, name in METRIC_NAMES:
        md += [f"## {name}", "", "| variant | steps | train s | PPL(1x) | "
               + " | ".join(f"{m}x ({length[m]:,})" for m in mults) + " |", "|" + "---|" * (4 + len(mults))]
        for v in names:
            if v not in runs:
                md.append(f"| {v} | failed | | | " + " | " * len(mults))
                continue
            d = runs[v]
            ev = {r["multiple"]: r for r in d.get("eval", [])}
            cells = [f"{ev[m][key]:.2f} [{ev[m]['ci_low' + key[5:]]:.2f}, {ev[m]['ci_high' + key[5:]]:.2f}]"
                     if m in ev else ("—" if d.get("eval_complete", True) else "not reached") for m in mults]
            ppl1 = f"{ev[1]['ppl']:.3f}" if 1 in ev else "—"
            md.append(f"| {v} | {d['step']} | {d['seconds']:.0f} | {ppl1} | " + " | ".join(cells) + " |")
        md.append("")
    md.append("Intervals: 95% percentile bootstrap over the evaluation windows (one seed; the author's windows differ "
              "per length, so the interval treats the two lengths as paired by index only).")
    out = {"preset": preset, "rows": rows}
    (folder / "summary.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (folder / "summary.json").write_text(json.dumps(out, indent=1), encoding="utf-8")
    print("\n".join(md))
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or not Path(args[0]).is_dir():
        print("usage: python -m simulations.transformer.c6.gpu_summary FOLDER PRESET [VARIANT ...] (FOLDER: an existing "
              "folder of <variant>.json runs)", file=sys.stderr)
        return 2
    summarize_folder(args[0], args[1], args[2:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
