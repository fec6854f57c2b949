"""The ``stylized`` command line: ``check``, ``figures``, ``transformer``, ``bench``.

``stylized check --list``                       every check with its options and defaults
``stylized check NAME [--opt v …] [--json]``    one check with your parameters
``stylized check --all``                        every check at its defaults → results + paper_checks.md
``stylized figures [NAME … | --all]``           regenerate figures from the results (running what is missing)

With ``--json`` stdout is exactly one JSON object ``{"claim", "params", "holds", "rows",
"seconds", …}``.  ``--out DIR`` (``check``, ``check --all``, ``figures``) puts results, figures and
``paper_checks.md`` under DIR (default: the source checkout's folders, else the current directory);
``--quiet`` hides progress and prints only the verdict line.  Further sub-commands (``transformer``,
``spot-check``) are plugged in through the ``stylized.commands`` entry points and imported only when run.

Exit status: 0 when the claim holds, 1 when it does not (``check --all``: when any does
not), 2 on bad input (one line naming the option and its allowed range).
"""

from __future__ import annotations

import argparse
import json
import sys

from . import __version__
from .backend import BACKENDS
from .options import Choice, Int, arg_type
from .registry import COMMANDS_GROUP, load_checks, load_plugin, plugins
from .report import fmt, write_paper_checks
from .results import (
    Stopwatch,
    check_writable,
    figures_dir,
    is_canonical,
    is_up_to_date,
    load_result,
    results_dir,
    run_check,
    save_result,
    use_output_root,
)

__all__ = ["main", "build_parser"]

SEED = Int(0, 2**32 - 1)


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (exit 2), without the usage block."""

    def error(self, message: str):
        # "argument --opt: must be …" → "--opt: must be …", one line, under the program's name
        message = _one_line(message.removeprefix("argument "))
        flag, _, rest = message.partition(": ")
        action = self._option_string_actions.get(flag.split("/")[0])
        spec = getattr(action, "spec", None) or getattr(getattr(action, "type", None), "spec", None)
        if rest.startswith("expected one argument") and spec is not None:  # a value such as -1e+16 or -inf
            message = f"{flag}: must be {spec.describe()}, got a value starting with '-' (write {flag}=VALUE)"
        self.exit(2, f"stylized: error: {message}\n")


def _add_common(p: argparse.ArgumentParser, backends) -> None:
    p.add_argument("--seed", type=arg_type(SEED), default=0, help=f"random seed, {SEED.describe()} (default 0)")
    p.add_argument("--backend", default="numba",  # validated in _cmd_check (one line, exit 2)
                   help=f"array backend: {', '.join(backends)} (default numba)")
    p.add_argument("--dry-run", action="store_true", help="validate the options and print the parameters as JSON; run nothing")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    p.add_argument("--save", action="store_true", help="also save the result under simulations/results/")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    _add_output(p, argparse.SUPPRESS)


def _add_output(p: argparse.ArgumentParser, default) -> None:
    """``--out DIR`` and ``--quiet`` (on a check sub-command the default is SUPPRESS so ``check``'s own value stays)."""
    p.add_argument("--out", default=default, metavar="DIR",
                   help="write results, figures and paper_checks.md under DIR (default: the source checkout's folders, "
                        "else the current directory)")
    p.add_argument("--quiet", action="store_true", default=default if default is argparse.SUPPRESS else False,
                   help="no progress bars; print only the verdict line")


def build_parser(load: str | None = None) -> argparse.ArgumentParser:
    """The full parser.  Sub-commands plugged in through the ``stylized.commands`` entry points (the
    torch-backed ``transformer``) are only imported when ``load`` names them; otherwise a stub lists them."""
    parser = _Parser(prog="stylized", description="Theory checks for accumulated orthogonal transforms in attention.")
    parser.add_argument("--version", action="version", version=f"stylized {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    pc = sub.add_parser("check", help="run paper checks", description="Run one paper check, or all of them.")
    pc.add_argument("--list", action="store_true", help="list every check with its options and defaults")
    pc.add_argument("--all", action="store_true", help="run every check at its defaults, save results, regenerate paper_checks.md")
    pc.add_argument("--force", action="store_true", help="with --all: rerun checks whose results are up to date")
    pc.add_argument("--all-backend", default="numba", type=arg_type(Choice(*BACKENDS)),
                    help=f"with --all: backend to use, one of {', '.join(BACKENDS)} (default numba)")
    _add_output(pc, None)
    csub = pc.add_subparsers(dest="name", parser_class=_Parser, metavar="CLAIM")
    for check in load_checks(external=True).values():
        about = f"{check.claim}: {check.statement}".replace("%", "%%")  # argparse %-formats help text
        cp = csub.add_parser(check.name, help=about, description=about)
        for o in check.options:
            action = cp.add_argument(o.flag, dest=o.name, default=None, metavar=o.name.upper(),
                                     help=f"{o.help}; {o.allowed() or 'any'} (default {o.default})".replace("%", "%%"))
            action.spec = o.spec  # named in the one-line error for a value argparse takes for a flag
        _add_common(cp, check.backends)
        cp.set_defaults(check=check)

    pf = sub.add_parser("figures", help="regenerate figures", description="Regenerate figures into figures/ from the results, running what is missing.")
    pf.add_argument("names", nargs="*", metavar="NAME", help="figure names (a check name, or 'transformer')")
    pf.add_argument("--all", action="store_true", help="every figure")
    _add_output(pf, None)

    pz = sub.add_parser("falsify", help="mutants that must flip each verdict, and false-rejection rates",
                        description="Run every check's mutants (each must turn holds false) and measure the "
                                    "false-rejection rate over seeds, at the checks' reduced sizes.")
    pz.add_argument("names", nargs="*", metavar="NAME", help="checks (default: all)")
    pz.add_argument("--seeds", type=arg_type(Int(1, 10_000)), default=100, help="seeds for the false-rejection rate (default 100)")
    pz.add_argument("--no-frr", action="store_true", help="only the mutation table")
    pz.add_argument("--no-mutants", action="store_true", help="only the false-rejection rates")
    pz.add_argument("--dry-run", action="store_true", help="validate the names and options; run nothing")
    pz.set_defaults(func=lambda a: _falsify_main(a.names, seeds=a.seeds, mutants=not a.no_mutants, frr=not a.no_frr,
                                                 dry_run=a.dry_run))

    from .sweep import add_parser as add_sweep

    add_sweep(sub)
    parser.missing_plugins = _add_plugin_commands(sub, load)  # last: a plugin never shadows a built-in command
    return parser


def _add_plugin_commands(sub, load: str | None) -> dict[str, str]:
    """Add the entry-point commands (only ``load`` is imported); returns ``{name: one-line error}`` for the
    loaded one when its package is missing, which ``main`` gives for any arguments."""
    missing = {}
    for name, value in plugins(COMMANDS_GROUP).items():
        if name in sub.choices:  # a built-in command of that name wins
            continue
        if name != load:
            sub.add_parser(name, help=f"{name} commands (stylized {name} --help)")
            continue
        try:
            load_plugin(value)(sub)
        except ImportError as e:  # an optional extra (torch) or the checkout's benchmarks/ is missing
            sub.add_parser(name, help=f"{name} commands (needs an optional part)")
            missing[name] = (f"{name}: needs a part that is not installed (transformer, spot-check: the "
                             f"'transformer' extra, which provides torch; bench: the source checkout's "
                             f"benchmarks/ package): {e}")

    return missing


def _falsify_main(*a, **k) -> int:
    from .falsify import main as falsify_main

    return falsify_main(*a, **k)


def _one_line(msg: str) -> str:
    """The first line of ``msg`` (split at ``\\n`` only), non-printable characters escaped: one line, always."""
    first = str(msg).split("\n")[0]
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in first)


def _fail(msg: str) -> int:
    print(f"stylized: error: {_one_line(msg)}", file=sys.stderr)
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


def _verdict_line(r: dict) -> str:
    return f"{r['paper_claim']} {r['claim']}: {'HOLDS' if r['holds'] else 'DOES NOT HOLD'}   ({r['seconds']:.2f} s)"


def _print_result(r: dict) -> None:
    print(_verdict_line(r))
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
                print(f"    {o.flag:<14} {str(o.default):<24} {o.help}; {o.allowed() or 'any'}")
            print(f"    {'--seed':<14} {'0':<24} random seed")
            print(f"    {'--backend':<14} {'numba':<24} {', '.join(c.backends)}")
        return 0
    if args.all:
        return _run_all(checks, force=args.force, backend=args.all_backend, quiet=args.quiet)
    if not getattr(args, "name", None):
        return _fail("check: give a CLAIM, --list or --all (see stylized check --help)")
    check = args.check
    given = {o.name: getattr(args, o.name) for o in check.options if getattr(args, o.name) is not None}
    params = check.parse_params(given)  # every option validated (ranges, work cap) before any work or file
    try:
        Choice(*check.backends)(args.backend)
    except ValueError as e:
        raise ValueError(f"--backend: {e}") from None
    if args.dry_run:
        json.dump({"claim": check.name, "params": {**params, "seed": args.seed, "backend": args.backend}}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    out_dir = None
    args.save = args.save or getattr(args, "out", None) is not None  # --out DIR keeps the result there
    if args.save:
        # only the paper's run (built-in defaults, seed 0) replaces the canonical result;
        # any other run is saved under results/runs/<check>-<params hash>/
        canonical = is_canonical(check, given, args.seed, args.backend)
        out_dir = results_dir() if canonical else _run_dir(check.name, given, args.seed, args.backend)
        check_writable(out_dir)
    if args.save and check.external:
        raise ValueError(f"--save: {check.name} reads a result another command wrote; there is nothing to save")
    result = run_check(check, given, seed=args.seed, backend=args.backend, progress=not (args.no_progress or args.quiet))
    if args.save:
        path = save_result(result, out_dir)
        if not args.quiet:
            print(f"saved {path}" + ("" if out_dir == results_dir() else " (exploratory: not the paper's result)"),
                  file=sys.stderr)
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
    elif args.quiet:
        print(_verdict_line(result))
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


def _run_all(checks, *, force: bool, backend: str, quiet: bool = False) -> int:
    """Every check at its defaults; one line per check on stdout and a tally; exit 1 if any does not hold.

    Checks whose results another command writes (C6, the bridge) are reported from those results
    when present, and not counted.  ``quiet``: only the tally line.
    """
    clock = Stopwatch()
    check_writable(results_dir())
    say = (lambda *a, **k: None) if quiet else print
    held = 0
    for i, check in enumerate(checks.values(), 1):
        r = load_result(check.name)
        if not force and is_up_to_date(check, r):
            note = f"up to date, {r['seconds']:.1f} s when run"
        else:
            say(f"[{i}/{len(checks)}] {check.name} …", file=sys.stderr)
            r = run_check(check, seed=0, backend=_backend_for(check, backend), progress=not quiet)
            save_result(r)
            note = f"{r['seconds']:.1f} s"
        held += bool(r["holds"])
        say(f"{check.claim} {check.name}: {'holds' if r['holds'] else 'DOES NOT HOLD'} ({note})", flush=True)
    for check in (c for c in load_checks(external=True).values() if c.external):
        try:
            r = run_check(check, seed=0, backend=_backend_for(check, backend), progress=False)
        except ValueError:  # its command has not been run (here)
            continue
        state = "reported" if r["holds"] is None else ("holds" if r["holds"] else "DOES NOT HOLD")
        say(f"{check.claim} {check.name}: {state} "
            f"(read from {r.get('source', 'its saved result')}; not counted)", flush=True)
    path = write_paper_checks()
    print(f"{held}/{len(checks)} hold", flush=True)
    say(f"wrote {path} and results in {results_dir()} ({clock.seconds:.1f} s)", file=sys.stderr)
    return 0 if held == len(checks) else 1


def _cmd_figures(args) -> int:
    checks = {k: c for k, c in load_checks(external=True).items() if c.plot is not None}
    external = [k for k, c in checks.items() if c.external]
    names = [k for k in checks if k not in external] + ["transformer"] if args.all or not args.names else args.names
    say = (lambda *a, **k: None) if args.quiet else print
    for name in names:  # every name validated before any work
        if name not in [*checks, "transformer"]:
            return _fail(f"figures: NAME must be one of {', '.join([*checks, 'transformer'])}; got {str(name)[:40]!r}")
    for name in names:
        for check in [checks[k] for k in external] if name == "transformer" else [checks[name]]:
            if check.external:  # plots what its command saved
                paths = check.plot(None, figures_dir())
                if not paths:
                    say(f"{check.name}: no results yet in {results_dir()}", file=sys.stderr)
            else:
                r = load_result(check.name)
                if r is None:
                    say(f"{check.name}: no result yet, running it at its defaults …", file=sys.stderr)
                    r = run_check(check, seed=0, backend=_backend_for(check, "numba"), progress=not args.quiet)
                    save_result(r)
                paths = check.plot(r, figures_dir())
            for p in paths:
                say(f"wrote {p}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(load=argv[0] if argv else None)
    if argv and argv[0] in parser.missing_plugins:  # before parsing: the plugin's own options are unknown here
        return _fail(parser.missing_plugins[argv[0]])
    args = parser.parse_args(argv)
    try:
        out = getattr(args, "out", None)
        if out is not None:
            check_writable(out)
        with use_output_root(out):
            if args.command == "check":
                return _cmd_check(args)
            if args.command == "figures":
                return _cmd_figures(args)
            if getattr(args, "func", None):
                return int(args.func(args) or 0)
        parser.print_help()
        return 0
    except ValueError as e:
        return _fail(str(e) if str(e) else repr(e))


if __name__ == "__main__":
    sys.exit(main())
