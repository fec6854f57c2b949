"""``stylized figures``: redraw figures from the saved results, or one figure from an exploratory result
(``--from RESULT.json``).  Bad input raises :class:`~stylized.InvalidInput` before any work: the command line
prints it as one line and exits 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.errors import InvalidInput
from ..harness.registry import load_checks
from ..harness.results import check_writable, figures_dir, load_result, results_dir, run_check, save_result

__all__ = ["cmd_figures", "figure_from_result"]


def cmd_figures(args) -> int:
    """``stylized figures [NAME … | --all] [--from RESULT.json]``: redraw figures from saved results."""
    checks = {k: c for k, c in load_checks(external=True).items() if c.plot is not None}
    external = [k for k, c in checks.items() if c.external]
    if getattr(args, "from_result", None) is not None:
        return figure_from_result(args, {k: c for k, c in checks.items() if not c.external})
    names = [k for k in checks if k not in external] + ["transformer"] if args.all or not args.names else args.names
    say = (lambda *a, **k: None) if args.quiet else print
    for name in names:  # every name validated before any work
        if name not in [*checks, "transformer"]:
            raise InvalidInput(f"figures: NAME must be one of {', '.join([*checks, 'transformer'])}; got {str(name)[:40]!r}")
    check_writable(figures_dir())  # and where a missing result is saved: both proven before any work
    check_writable(results_dir())
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
                    r = run_check(check, seed=0, backend=check.backend_for("numba"), progress=not args.quiet)
                    save_result(r)
                paths = check.plot(r, figures_dir())
            for p in paths:
                say(f"wrote {p}", file=sys.stderr)
    return 0


def figure_from_result(args, checks: dict) -> int:
    """``figures [NAME] --from RESULT.json``: one figure from a saved result, validated first (one line, exit 2).

    The file must exist and hold a JSON result object whose ``"claim"`` names a check with a figure (and NAME,
    when given, must be that check); the figure goes beside the file (or under ``--out DIR``/figures), never
    into the committed ``figures/`` unless asked.  Nothing is run.
    """
    src = Path(args.from_result)
    if args.all or len(args.names) > 1:
        raise InvalidInput("figures --from: give one NAME (or none: the result names its check), not --all or several")
    try:
        r = json.loads(src.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"--from: {str(src)[:120]} does not exist") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else "not JSON" if isinstance(e, ValueError) else type(e).__name__
        raise InvalidInput(f"--from: {str(src)[:120]} is not a readable JSON result ({why})") from None
    claim = r.get("claim") if isinstance(r, dict) else None
    if not isinstance(claim, str) or not isinstance(r.get("rows"), list) or "params" not in r:
        raise InvalidInput(f"--from: {str(src)[:120]} is not a check result (no \"claim\", \"params\" and \"rows\")")
    if claim not in checks:
        raise InvalidInput(f"--from: the result's claim {claim[:40]!r} is not a check with a figure "
                           f"(one of {', '.join(checks)})")
    if args.names and args.names[0] != claim:
        raise InvalidInput(f"figures --from: NAME {str(args.names[0])[:40]!r} does not match the result's claim {claim!r}")
    where = figures_dir() if args.out is not None else src.resolve().parent
    check_writable(where, "--out")
    say = (lambda *a, **k: None) if args.quiet else print
    for p in checks[claim].plot(r, where):
        say(f"wrote {p}", file=sys.stderr)
    return 0
