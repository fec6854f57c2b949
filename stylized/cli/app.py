"""The ``stylized`` command line: ``check``, ``figures``, ``transformer``, ``bench``.

``stylized check --list``                       every check with its options and defaults
``stylized check NAME [--opt v …] [--json]``    one check with your parameters (and its false-rejection rate)
``stylized check NAME --seeds N``               one verdict over N seeds at a stated level (:mod:`.seeds`)
``stylized check --all``                        every check at its defaults → results + paper_checks.md
``stylized figures [NAME … | --all]``           regenerate figures from the results (running what is missing)

With ``--json`` stdout is exactly one JSON object ``{"claim", "params", "holds", "rows",
"seconds", …}``.  ``--out DIR`` (``check``, ``check --all``, ``figures``) puts results, figures and
``paper_checks.md`` under DIR (default: the source checkout's folders, else the current directory);
``--quiet`` hides progress and prints only the verdict line.  Further sub-commands (``transformer``,
``spot-check``) are plugged in through the ``stylized.commands`` entry points and imported only when run.

Exit status, three kinds of failure told apart:

* 0: the claim holds (``check --all``: every stylized check holds; with ``--strict``, every claim does);
* 1: a claim does not hold;
* 2: bad input, found before any work or file: an option out of range, options that do not fit together, a
  destination that cannot be written, a missing optional part (one line ``stylized: error: …`` naming the option);
* 3: an internal error (anything else, a ``ValueError`` raised while a check runs included): one line
  ``stylized: internal error: … (full traceback in FILE)``, the traceback kept in that file; never printed.
* 74: the machine refused a write the checks before the work could not foresee (a disk filled or a folder turned
  read-only while it ran): one line ``stylized: I/O error: …`` naming the file; atomic writes leave no partial file.
* 130: interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import sys

from .. import __version__
from ..core.backend import BACKENDS
from ..core.errors import InvalidInput, save_traceback
from ..core.options import Choice, Choices, Int, OptionParser, arg_type, one_line
from ..harness.registry import COMMANDS_GROUP, load_checks, load_plugin, plugins
from ..harness.report import write_paper_checks
from ..harness.results import (
    Stopwatch,
    check_writable,
    is_canonical,
    is_up_to_date,
    load_result,
    results_dir,
    run_check,
    save_result,
    use_output_root,
    validate_run,
)
from .validate import checked_falsify, checked_sweep, package_present, validation

__all__ = ["main", "build_parser"]

SEED = Int(0, 2**32 - 1)
SEEDS = Int(1, 1000)


def _add_common(p: argparse.ArgumentParser, backends) -> None:
    p.add_argument("--seed", type=arg_type(SEED), default=0, help=f"random seed, {SEED.describe()} (default 0)")
    p.add_argument("--seeds", type=arg_type(SEEDS), default=1, metavar="N",
                   help=f"run seeds SEED … SEED+N−1 and give one verdict over them at a stated false-rejection rate "
                        f"(stylized.cli.seeds), {SEEDS.describe()} (default 1)")
    p.add_argument("--backend", default="numba",  # validated in _cmd_check (one line, exit 2)
                   help=f"array backend: {', '.join(backends)} (default numba)")
    p.add_argument("--dry-run", action="store_true", help="validate the options and print the parameters as JSON; run nothing")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    p.add_argument("--save", action="store_true", help="also save the result under simulations/results/")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print every row and column (default: the verdict and a screenful of rows)")
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
    torch-backed ``transformer``) are only imported when ``load`` names them; otherwise a stub lists them.
    The per-check parsers of ``check`` (which import every check module) are built when ``load`` is
    ``None`` or ``"check"``, so ``stylized --version`` and ``stylized --help`` start without them."""
    parser = OptionParser(prog="stylized", description="Theory checks for accumulated orthogonal transforms in attention.")
    parser.add_argument("--version", action="version", version=f"stylized {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=OptionParser)

    pc = sub.add_parser("check", help="run paper checks", description="Run one paper check, or all of them.")
    pc.add_argument("--list", action="store_true", help="list every check with its options and defaults")
    pc.add_argument("--all", action="store_true", help="run every check at its defaults, save results, regenerate paper_checks.md")
    pc.add_argument("--force", action="store_true", help="with --all: rerun checks whose results are up to date")
    pc.add_argument("--all-backend", default="numba", type=arg_type(Choice(*BACKENDS)),
                    help=f"with --all: backend to use, one of {', '.join(BACKENDS)} (default numba)")
    pc.add_argument("--strict", action="store_true",
                    help="with --all: the exit status follows every claim, the ones read from other commands' "
                         "results included (default: the stylized checks only)")
    _add_output(pc, None)
    csub = pc.add_subparsers(dest="name", parser_class=OptionParser, metavar="CLAIM")
    for check in (load_checks(external=True).values() if load in (None, "check") else ()):
        about = f"{check.claim}: {check.statement}".replace("%", "%%")  # argparse %-formats help text
        cp = csub.add_parser(check.name, help=about, description=about)
        for o in check.options:
            action = cp.add_argument(o.flag, dest=o.name, default=None, metavar=o.name.upper(),
                                     action="append" if getattr(o.spec, "repeatable", False) else "store",
                                     help=f"{o.help}; {o.allowed() or 'any'} (default {o.default})".replace("%", "%%"))
            action.spec = o.spec  # named in the one-line error for a value argparse takes for a flag
        _add_common(cp, check.backends)
        cp.set_defaults(check=check)

    pf = sub.add_parser("figures", help="regenerate figures",
                        description="Regenerate figures into figures/ from the results, running what is missing; "
                                    "with --from, redraw one check's figure from a result you saved (an exploratory "
                                    "run), next to that result unless --out is given: the committed figure is not touched.")
    pf.add_argument("names", nargs="*", metavar="NAME", help="figure names (a check name, or 'transformer')")
    pf.add_argument("--all", action="store_true", help="every figure")
    pf.add_argument("--from", dest="from_result", default=None, metavar="RESULT.json",
                    help="redraw NAME's figure from this result JSON (as 'stylized check NAME --save --out DIR' or "
                         "--json writes it); NAME may be left out (the result's \"claim\" names it); the PNG and PDF "
                         "go beside the JSON, or under DIR/figures with --out DIR; nothing is run")
    _add_output(pf, None)

    pz = sub.add_parser("falsify", help="mutants that must flip each verdict, and false-rejection rates",
                        description="Run every check's mutants (each must turn holds false) and measure the "
                                    "false-rejection rate over seeds, at the checks' reduced sizes.")
    pz.add_argument("names", nargs="*", metavar="NAME", help="checks (default: all)")
    pz.add_argument("--seeds", type=arg_type(Int(1, 10_000)), default=100, help="seeds for the false-rejection rate (default 100)")
    pz.add_argument("--no-frr", action="store_true", help="only the mutation table")
    pz.add_argument("--no-mutants", action="store_true", help="only the false-rejection rates")
    pz.add_argument("--dry-run", action="store_true", help="validate the names and options; run nothing")
    pz.add_argument("--sensitivity", type=arg_type(Choices("reduced", "default")), default=None, metavar="SIZES",
                    help="also measure the power: the smallest relative error of each theory (both signs) that "
                         "flips the verdict, at these sizes (comma list of reduced, default); with --no-mutants "
                         "--no-frr only that")
    pz.set_defaults(func=lambda a: checked_falsify(a.names, seeds=a.seeds, mutants=not a.no_mutants, frr=not a.no_frr,
                                                 dry_run=a.dry_run, sensitivity_sizes=tuple(a.sensitivity or ())))

    from ..harness.sweep import add_parser as add_sweep

    ps = add_sweep(sub)
    run_sweep = ps.get_default("func")
    ps.set_defaults(func=lambda a: checked_sweep(a, run_sweep))  # everything validated before the sweep's work
    from .premises import add_parser as add_premises

    add_premises(sub)  # stylized premises --family LAW --d D
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
            if package_present(value):  # a command whose package is not installed is not advertised
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


def _fail(msg: str) -> int:
    print(f"stylized: error: {one_line(msg)}", file=sys.stderr)
    return 2


def _verdict_line(r: dict) -> str:
    state = "REPORTED (a measurement, no verdict)" if r["holds"] is None else "HOLDS" if r["holds"] else "DOES NOT HOLD"
    frr = r.get("false_rejection")
    rate = (f"; false-rejection rate {100 * frr['rate']:.1f}% over {frr['n_seeds']} seeds" if frr and r["holds"] is not None
            else "")
    return f"{r['paper_claim']} {r['claim']}: {state}   ({r['seconds']:.2f} s{rate})"


def _print_result(r: dict, verbose: bool = False) -> None:
    """The verdict line, the headline's sentence, then the rows: a screenful (:func:`.cli_table.compact_table`),
    or with ``verbose`` every row and column."""
    import shutil
    import textwrap

    from .seeds import frr_sentence
    from .table import compact_table, table

    print(_verdict_line(r))
    h = r.get("headline", {})
    width = shutil.get_terminal_size((120, 24)).columns
    if h.get("verdict"):
        print(h["verdict"] if verbose else textwrap.fill(h["verdict"], width))
    if r["holds"] is not None:
        print(textwrap.fill(frr_sentence(r.get("false_rejection")), width))
    print(table(r["rows"]) if verbose else compact_table(r["rows"]))


def _cmd_check(args) -> int:
    checks = load_checks()
    if args.list:
        from .list_cache import print_listing

        print_listing(checks)
        return 0
    if args.all:
        return _run_all(checks, force=args.force, backend=args.all_backend, quiet=args.quiet, strict=args.strict)
    if args.strict:
        raise InvalidInput("--strict: only with --all (a single check's exit status already follows its claim)")
    if not getattr(args, "name", None):
        return _fail("check: give a CLAIM, --list or --all (see stylized check --help)")
    check = args.check
    given = {o.name: getattr(args, o.name) for o in check.options if getattr(args, o.name) is not None}
    try:
        Choice(*check.backends)(args.backend)
    except ValueError as e:
        raise InvalidInput(f"--backend: {e}") from None
    # every option validated (ranges, work cap, the limits between options), the backend's availability too,
    # before any work or file: --dry-run refuses exactly what the run would
    params = validate_run(check, given, seed=args.seed, backend=args.backend)
    args.save = args.save or getattr(args, "out", None) is not None  # --out DIR keeps the result there
    if args.save and check.external:
        raise InvalidInput(f"--save: {check.name} reads a result another command wrote; there is nothing to save")
    out_dir = None
    if args.save:
        # only the paper's run (built-in defaults, seed 0) replaces the canonical result;
        # any other run is saved under results/runs/<check>-<params hash>/
        canonical = is_canonical(check, given, args.seed, args.backend)
        out_dir = results_dir() if canonical else _run_dir(check.name, given, args.seed, args.backend)
        check_writable(out_dir)
    if args.seeds > 1 and args.save:
        raise InvalidInput("--seeds: not with --save or --out (each seed's run is exploratory; save one seed at a time)")
    if args.seed + args.seeds - 1 > SEED.hi:
        raise InvalidInput(f"--seeds: SEED + N − 1 must be ≤ {SEED.hi}, got {args.seed} + {args.seeds} − 1")
    if args.dry_run:
        json.dump({"claim": check.name, "params": {**params, "seed": args.seed, "backend": args.backend},
                   **({"seeds": args.seeds} if args.seeds > 1 else {})}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    progress = not (args.no_progress or args.quiet)
    if args.seeds > 1:
        from .seeds import check_seeds

        return check_seeds(check.name, range(args.seed, args.seed + args.seeds), args, _verdict_line,
                           lambda seed: _run_one(check, given, params, seed, args.backend, progress))
    result = _run_one(check, given, params, args.seed, args.backend, progress)
    if args.save:
        path = save_result(result, out_dir)
        if not args.quiet:
            print(f"saved {path}" + ("" if out_dir == results_dir() else " (exploratory: not the paper's result)"),
                  file=sys.stderr)
    from .seeds import false_rejection

    result["false_rejection"] = false_rejection(check.name)  # shown, not saved: the committed falsify result's
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
    elif args.quiet:
        print(_verdict_line(result))
    else:
        _print_result(result, verbose=args.verbose)
    return 0 if result["holds"] or result["holds"] is None else 1  # a reported measurement has no claim to fail


def _run_one(check, given: dict, params: dict, seed: int, backend: str, progress: bool) -> dict:
    if check.external:  # it reads what another command wrote: a result that is not there is not a bug here
        with validation():
            return run_check(check, given, seed=seed, backend=backend, progress=progress)
    from ..laws.trust import user_code, user_files  # here: importing the laws costs a second at start-up

    with user_code(user_files(params.get("family"))):  # a user's law failing mid-run: one line naming --family
        return run_check(check, given, seed=seed, backend=backend, progress=progress)


def _run_dir(name: str, given: dict, seed: int, backend: str):
    import hashlib

    key = json.dumps({"params": given, "seed": seed, "backend": backend}, sort_keys=True, default=str)
    return results_dir() / "runs" / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def _run_all(checks, *, force: bool, backend: str, quiet: bool = False, strict: bool = False) -> int:
    """Every check at its defaults; one line per check on stdout, then a tally that states every claim.

    Checks whose results another command writes (C6, the bridge, retrieval) are reported from those results when
    present (``not run`` when absent).  Exit 1 if a stylized check does not hold; with ``strict``, also if an
    external claim does not hold or has no result (a *reported* measurement has no verdict and never counts).
    ``quiet``: only the tally line.
    """
    from ..harness.report import paper_checks_path
    from .seeds import false_rejection

    clock = Stopwatch()
    check_writable(results_dir())  # every destination proven before any work
    check_writable(paper_checks_path().parent)
    say = (lambda *a, **k: None) if quiet else print
    held = 0
    for i, check in enumerate(checks.values(), 1):
        r = load_result(check.name)
        if not force and is_up_to_date(check, r):
            note = f"up to date, {r['seconds']:.1f} s when run"
        else:
            say(f"[{i}/{len(checks)}] {check.name} …", file=sys.stderr)
            r = run_check(check, seed=0, backend=check.backend_for(backend), progress=not quiet)
            save_result(r)
            note = f"{r['seconds']:.1f} s"
        held += bool(r["holds"])
        frr = false_rejection(check.name)  # the committed falsify result's (stylized.cli.seeds)
        note += f"; false-rejection rate {100 * frr['rate']:.1f}% over {frr['n_seeds']} seeds" if frr else ""
        say(f"{check.claim} {check.name}: {'holds' if r['holds'] else 'DOES NOT HOLD'} ({note})", flush=True)
    external: dict[str, bool | None | str] = {}  # name → holds (True/False), None (reported) or "not run"
    for check in (c for c in load_checks(external=True).values() if c.external):
        try:
            r = run_check(check, seed=0, backend=check.backend_for(backend), progress=False)
        except ValueError:  # its command has not been run (here)
            external[check.name] = "not run"
            continue
        external[check.name] = r["holds"]
        state = "reported" if r["holds"] is None else ("holds" if r["holds"] else "DOES NOT HOLD")
        say(f"{check.claim} {check.name}: {state} "
            f"(read from {r.get('source', 'its saved result')}; not counted)", flush=True)
    path = write_paper_checks()
    print(_tally(held, len(checks), external), flush=True)
    say(f"wrote {path} and results in {results_dir()} ({clock.seconds:.1f} s)", file=sys.stderr)
    ok = held == len(checks)
    if strict:
        ok = ok and all(v is None or v is True for v in external.values())
    return 0 if ok else 1


def _tally(held: int, total: int, external: dict) -> str:
    """``13/13 stylized checks hold · transformer-compare does not hold · transformer-retrieval reported``."""
    word = {True: "holds", False: "does not hold", None: "reported", "not run": "not run (no result)"}
    parts = [f"{held}/{total} stylized checks hold"] + [f"{name} {word[v]}" for name, v in external.items()]
    return " · ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """``stylized …``: the exit status tells the three kinds of failure apart (see the module's docstring)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(argv)
    except InvalidInput as e:
        return _fail(str(e) if str(e) else repr(e))
    except KeyboardInterrupt:
        print("stylized: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (``| head``): nothing more to say
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # no second error when Python flushes stdout at exit
        return 141
    except OSError as e:
        if e.errno not in _ENVIRONMENT_ERRNOS:
            return _internal_error(e, argv)
        where = f" {e.filename}" if e.filename else ""
        print(f"stylized: I/O error:{where}: {e.strerror or type(e).__name__} (the machine refused a write; "
              "nothing partial was left)", file=sys.stderr)
        return 74
    except Exception as e:  # anything else is ours: one line, the traceback in a file
        return _internal_error(e, argv)


#: OS errors that are the machine's state, not a bug: no space, quota, read-only file system, I/O failure
_ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


def _internal_error(e: BaseException, argv: list[str]) -> int:
    where = save_traceback(e, argv)
    what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    shown = where if where.startswith("(") else f"(full traceback in {where})"
    print(f"stylized: internal error: {one_line(what)} {shown}", file=sys.stderr)
    return 3


def _main(argv: list[str]) -> int:
    if argv == ["check", "--list"]:  # from the cache while no source changed (.list_cache)
        from .list_cache import read_listing

        if (text := read_listing()) is not None:
            sys.stdout.write(text)
            return 0
    parser = build_parser(load=argv[0] if argv else "")
    if argv and argv[0] in parser.missing_plugins:  # before parsing: the plugin's own options are unknown here
        return _fail(parser.missing_plugins[argv[0]])
    args = parser.parse_args(argv)
    out = getattr(args, "out", None)
    if out is not None:
        check_writable(out)  # proven before any work (InvalidInput naming --out)
    with use_output_root(out):
        if args.command == "check":
            return _cmd_check(args)
        if args.command == "figures":
            from .figures import cmd_figures

            return cmd_figures(args)
        if getattr(args, "func", None):
            return int(args.func(args) or 0)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
