"""The ``stylized`` command line: ``check``, ``figures``, ``transformer``, ``bench``.

``stylized check --list``                       every check with its options and defaults
``stylized check NAME [--opt v …] [--json]``    one check with your parameters
``stylized check --all``                        every check at its defaults → results + paper_checks.md
``stylized figures [NAME … | --all]``           regenerate figures from the results (running what is missing)

With ``--json`` stdout is exactly one JSON object ``{"claim", "params", "holds", "rows",
"seconds", …}``.

Exit status: 0 when the claim holds, 1 when it does not (``check --all``: when any does
not), 2 on bad input (one line naming the option and its allowed range).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from . import __version__
from .registry import load_checks
from .report import fmt, write_paper_checks
from .results import (
    check_writable,
    figures_dir,
    is_canonical,
    is_up_to_date,
    load_result,
    results_dir,
    run_check,
    save_result,
)

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (exit 2), without the usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _add_common(p: argparse.ArgumentParser, backends) -> None:
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--backend", default="numba", help=f"array backend: {', '.join(backends)} (default numba)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    p.add_argument("--save", action="store_true", help="also save the result under simulations/results/")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def build_parser(with_transformer: bool = False) -> argparse.ArgumentParser:
    """The full parser; the torch-backed ``transformer`` commands are only loaded when asked for."""
    parser = _Parser(prog="stylized", description="Theory checks for accumulated orthogonal transforms in attention.")
    parser.add_argument("--version", action="version", version=f"stylized {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    pc = sub.add_parser("check", help="run paper checks", description="Run one paper check, or all of them.")
    pc.add_argument("--list", action="store_true", help="list every check with its options and defaults")
    pc.add_argument("--all", action="store_true", help="run every check at its defaults, save results, regenerate paper_checks.md")
    pc.add_argument("--force", action="store_true", help="with --all: rerun checks whose results are up to date")
    pc.add_argument("--all-backend", default="numba", help="with --all: backend to use (default numba)")
    csub = pc.add_subparsers(dest="name", parser_class=_Parser, metavar="CLAIM")
    for check in load_checks().values():
        cp = csub.add_parser(check.name, help=f"{check.claim}: {check.statement}", description=f"{check.claim}: {check.statement}")
        for o in check.options:
            cp.add_argument(o.flag, dest=o.name, default=None, metavar=o.name.upper(), help=f"{o.help} (default {o.default})")
        _add_common(cp, check.backends)
        cp.set_defaults(check=check)

    pf = sub.add_parser("figures", help="regenerate figures", description="Regenerate figures into figures/ from the results, running what is missing.")
    pf.add_argument("names", nargs="*", metavar="NAME", help="figure names (a check name, or 'transformer')")
    pf.add_argument("--all", action="store_true", help="every figure")

    if with_transformer:
        try:
            from simulations.transformer.cli import add_parser as add_transformer
        except ImportError as e:  # torch is an optional extra
            pt = sub.add_parser("transformer", help="train and compare small transformers (needs the 'transformer' extra)")
            pt.set_defaults(func=lambda a, _e=e: _fail(f"transformer: needs torch (pip install -e '.[transformer]'): {_e}"))
        else:
            add_transformer(sub)
    else:
        sub.add_parser("transformer", help="C6: train, evaluate and compare small transformers (stylized transformer --help)")

    pb = sub.add_parser("bench", help="benchmarks: ratios measured side by side")
    pb.add_argument("--json", action="store_true", help="print one JSON object")
    pb.add_argument("--repeat", type=int, default=5, help="repetitions per timing (median reported)")
    pb.add_argument("--with-check-all", action="store_true", help="also time `stylized check --all --force` (in temporary dirs)")
    pb.set_defaults(func=_cmd_bench)

    pz = sub.add_parser("falsify", help="mutants that must flip each verdict, and false-rejection rates",
                        description="Run every check's mutants (each must turn holds false) and measure the "
                                    "false-rejection rate over seeds, at the checks' reduced sizes.")
    pz.add_argument("names", nargs="*", metavar="NAME", help="checks (default: all)")
    pz.add_argument("--seeds", type=int, default=100, help="seeds for the false-rejection rate (default 100)")
    pz.add_argument("--no-frr", action="store_true", help="only the mutation table")
    pz.add_argument("--no-mutants", action="store_true", help="only the false-rejection rates")
    pz.set_defaults(func=lambda a: _falsify_main(a.names, seeds=a.seeds, mutants=not a.no_mutants, frr=not a.no_frr))

    from .sweep import add_parser as add_sweep

    add_sweep(sub)
    return parser


def _falsify_main(*a, **k) -> int:
    from .falsify import main as falsify_main

    return falsify_main(*a, **k)


def _fail(msg: str) -> int:
    print(f"stylized: error: {msg}", file=sys.stderr)
    return 2


def _table(rows: list[dict]) -> str:
    if not rows:
        return "(no rows)"
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys and not isinstance(r[k], (list, dict))]
    cells = [[fmt(r.get(k)) for k in keys] for r in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    out = ["  ".join(k.rjust(w) for k, w in zip(keys, widths)), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(out)


def _print_result(r: dict) -> None:
    print(f"{r['paper_claim']} {r['claim']}: {'HOLDS' if r['holds'] else 'DOES NOT HOLD'}   ({r['seconds']:.2f} s)")
    h = r.get("headline", {})
    if h.get("verdict"):
        print(h["verdict"])
    print(_table(r["rows"]))


def _cmd_check(args) -> int:
    checks = load_checks()
    if args.list:
        for c in checks.values():
            print(f"{c.name}  [{c.claim}]  {c.statement}")
            for o in c.options:
                print(f"    {o.flag:<14} {str(o.default):<24} {o.help}")
            print(f"    {'--seed':<14} {'0':<24} random seed")
            print(f"    {'--backend':<14} {'numba':<24} {', '.join(c.backends)}")
        return 0
    if args.all:
        return _run_all(checks, force=args.force, backend=args.all_backend)
    if not getattr(args, "name", None):
        return _fail("check: give a CLAIM, --list or --all (see stylized check --help)")
    check = args.check
    given = {o.name: getattr(args, o.name) for o in check.options if getattr(args, o.name) is not None}
    out_dir = None
    if args.save:
        # only the paper's run (built-in defaults, seed 0) replaces the canonical result;
        # any other run is saved under results/runs/<check>-<params hash>/
        canonical = is_canonical(check, given, args.seed, args.backend)
        out_dir = results_dir() if canonical else _run_dir(check.name, given, args.seed, args.backend)
        check_writable(out_dir)
    result = run_check(check, given, seed=args.seed, backend=args.backend, progress=not args.no_progress)
    if args.save:
        path = save_result(result, out_dir)
        print(f"saved {path}" + ("" if out_dir == results_dir() else " (exploratory: not the paper's result)"),
              file=sys.stderr)
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
    else:
        _print_result(result)
    return 0 if result["holds"] else 1


def _run_dir(name: str, given: dict, seed: int, backend: str):
    import hashlib

    key = json.dumps({"params": given, "seed": seed, "backend": backend}, sort_keys=True, default=str)
    return results_dir() / "runs" / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def _backend_for(check, preferred: str) -> str:
    """``preferred`` if the check supports it, else the check's first backend."""
    return preferred if preferred in check.backends else check.backends[0]


def _run_all(checks, *, force: bool, backend: str) -> int:
    """Every check at its defaults; one line per check on stdout and a tally; exit 1 if any does not hold."""
    t0 = time.perf_counter()
    check_writable(results_dir())
    held = 0
    for i, check in enumerate(checks.values(), 1):
        r = load_result(check.name)
        if not force and is_up_to_date(check, r):
            note = f"up to date, {r['seconds']:.1f} s when run"
        else:
            print(f"[{i}/{len(checks)}] {check.name} …", file=sys.stderr)
            r = run_check(check, seed=0, backend=_backend_for(check, backend))
            save_result(r)
            note = f"{r['seconds']:.1f} s"
        held += bool(r["holds"])
        print(f"{check.claim} {check.name}: {'holds' if r['holds'] else 'DOES NOT HOLD'} ({note})", flush=True)
    path = write_paper_checks()
    print(f"{held}/{len(checks)} hold", flush=True)
    print(f"wrote {path} and results in {results_dir()} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0 if held == len(checks) else 1


def _cmd_figures(args) -> int:
    checks = {k: c for k, c in load_checks().items() if c.plot is not None}
    names = list(checks) + ["transformer"] if args.all or not args.names else args.names
    for name in names:
        if name == "transformer":
            for p in _transformer_figures():
                print(f"wrote {p}", file=sys.stderr)
            continue
        if name not in checks:
            return _fail(f"figures: NAME must be one of {', '.join([*checks, 'transformer'])}; got {name!r}")
        check = checks[name]
        r = load_result(name)
        if r is None:
            print(f"{name}: no result yet, running it at its defaults …", file=sys.stderr)
            r = run_check(check, seed=0, backend=_backend_for(check, "numba"))
            save_result(r)
        for p in check.plot(r, figures_dir()):
            print(f"wrote {p}", file=sys.stderr)
    return 0


def _transformer_figures() -> list:
    """C6 and bridge figures from saved transformer results (no training)."""
    found = sorted((results_dir() / "transformer").glob("*_compare.json"))
    if not found:
        print("transformer: no results yet (stylized transformer compare --preset cpu)", file=sys.stderr)
        return []
    from simulations.transformer.bridge import plot_bridge
    from simulations.transformer.compare import plot_compare

    out = []
    for path in found:
        preset = path.name.removesuffix("_compare.json")
        out.append(plot_compare(path, figures_dir() / f"transformer_ppl_ratio{'' if preset == 'cpu' else '_' + preset}.png"))
    for path in sorted((results_dir() / "transformer").glob("bridge_*.json")):
        preset = path.stem.removeprefix("bridge_")
        bridge = json.loads(path.read_text())
        out.append(plot_bridge(bridge, figures_dir() / f"transformer_bridge{'' if preset == 'cpu' else '_' + preset}.png"))
    return out


def _cmd_bench(args) -> int:
    from .bench import main as bench_main

    return bench_main(repeat=args.repeat, as_json=args.json, with_check_all=args.with_check_all)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(with_transformer=bool(argv) and argv[0] == "transformer")
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return _cmd_check(args)
        if args.command == "figures":
            return _cmd_figures(args)
        if getattr(args, "func", None):
            return int(args.func(args) or 0)
        parser.print_help()
        return 0
    except ValueError as e:
        return _fail(str(e).splitlines()[0] if str(e) else repr(e))


if __name__ == "__main__":
    sys.exit(main())
