"""What the CLI checks before the work of ``sweep``, ``falsify`` and the plugged-in commands: bad input is an
:class:`~stylized.InvalidInput` (one line naming the option, exit 2) found before any work or file, so that an
exception raised later is never taken for bad input (it is an internal error, exit 3)."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path

from ..core.errors import InvalidInput
from ..harness.registry import load_checks
from ..harness.results import check_writable

__all__ = ["validation", "checked_sweep", "checked_falsify", "package_present"]


@contextlib.contextmanager
def validation() -> Iterator[None]:
    """Inside the block the code only validates: its ``ValueError`` is bad input (:class:`InvalidInput`)."""
    try:
        yield
    except InvalidInput:
        raise
    except ValueError as e:
        raise InvalidInput(str(e).splitlines()[0] if str(e) else type(e).__name__) from None


def checked_sweep(args, run) -> int:
    """``stylized sweep``: the check, the grid and every point's options (the limits between them included), the
    scheduler and the output folder validated before any work; then ``run(args)``."""
    from ..harness.sweep import parse_grid, validate_sweep

    with validation():
        grid = parse_grid(args.grid)
        if not grid:
            raise InvalidInput("--grid: give at least one --grid NAME=v1,v2")
        check, _ = validate_sweep(args.check, grid)
    if args.scheduler and importlib.util.find_spec("distributed") is None:
        raise InvalidInput("--scheduler: needs dask.distributed (pip install -e '.[dask]')")
    if args.scheduler is not None:
        from ..harness.sweep import check_scheduler

        with validation():  # a malformed or unreachable address: one line, exit 2, before any work
            check_scheduler(args.scheduler, probe=not args.dry_run)
    if not args.dry_run:
        check_writable(Path(args.out or Path("sweeps") / check.name), "--out")
    return run(args)


def checked_falsify(names: list[str], **options) -> int:
    """``stylized falsify``: the names validated and the output folder proven writable before any work."""
    from ..harness.falsify import falsify_dir
    from ..harness.falsify import main as falsify_main

    checks = load_checks()
    unknown = [n for n in names if n not in checks]
    if unknown:
        raise InvalidInput(f"NAME: must be one of {', '.join(checks)}; got {str(unknown[0])[:40]!r}")
    if not options.get("dry_run"):
        check_writable(falsify_dir())
    return falsify_main(names, **options)


def package_present(value: str) -> bool:
    """Whether the top-level package of entry point ``value`` (``"benchmarks.runner:add_parser"``) is installed
    or sits in the source checkout, found without importing it: a command whose package is absent (``bench``
    in an installed wheel, which has no ``benchmarks/``) is not advertised."""
    top = value.partition(":")[0].split(".")[0]
    try:
        if importlib.util.find_spec(top) is not None:
            return True
    except (ImportError, ValueError):
        pass
    return (Path(__file__).resolve().parents[2] / top / "__init__.py").is_file()
