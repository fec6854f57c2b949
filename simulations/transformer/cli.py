"""Command line: ``stylized transformer {train,eval,compare,bridge,combined,probe,...}``.

Each sub-package registers its own sub-commands (``add_commands`` in its ``commands`` module: :mod:`.train`,
:mod:`.evaluate`, :mod:`.c6`, :mod:`.recall`, :mod:`.bridge`); this module assembles them in the order the help
lists them and runs every one under :func:`.cli_guard.guard`.  The main ``stylized`` CLI calls :func:`add_parser`
with its sub-parsers and then ``args.func(args)``; ``python -m simulations.transformer ...`` uses :func:`main`.
Configuration errors (``ValueError``) exit with status 2 and one line.  Only a command's full default run
writes its committed results; any other run writes under ``exploratory/<command>/`` (:mod:`.paths`).
"""

from __future__ import annotations

import argparse
import sys

from .bridge.commands import add_commands as add_bridge_commands
from .c6.commands import add_commands as add_c6_commands
from .cli_guard import guard
from .evaluate.commands import add_commands as add_evaluate_commands
from .paths import remember_defaults
from .recall.commands import add_commands as add_recall_commands
from .train.commands import add_commands as add_train_commands

#: the sub-commands in the order ``stylized transformer --help`` lists them
COMMAND_ORDER = ("train", "eval", "compare", "lr-sweep", "recall", "recall-forecast", "chi-markov", "route-length",
                 "author-ab", "lr-robustness", "far-context", "passkey", "bridge", "combined", "probe", "long-eval",
                 "value-probe")


def in_help_order(sub: argparse._SubParsersAction) -> None:
    """List the sub-commands in :data:`COMMAND_ORDER` (the help and the invalid-choice message follow it)."""
    rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
    sub._choices_actions.sort(key=lambda a: rank[a.dest])
    parsers = sorted(sub.choices.items(), key=lambda kv: rank[kv[0]])
    sub.choices.clear()
    sub.choices.update(parsers)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``transformer`` sub-command with every sub-package's sub-commands."""
    p = subparsers.add_parser(
        "transformer", help="length extrapolation of small GPTs with accumulated transports"
    )
    sub = p.add_subparsers(dest="transformer_cmd", metavar="{train,eval,compare,bridge,combined,probe,...}")
    sub.required = True
    for add_commands in (add_train_commands, add_evaluate_commands, add_c6_commands, add_recall_commands,
                         add_bridge_commands):
        add_commands(sub)
    in_help_order(sub)
    for sp in sub.choices.values():
        sp.set_defaults(func=guard(sp.get_default("func")))
    remember_defaults(sub)  # every sub-command's defaults: a run that differs writes under exploratory/
    return p


def main(argv: list[str] | None = None) -> int:
    from stylized.core.options import OptionParser  # one-line usage errors (exit 2)

    parser = OptionParser(prog="python -m simulations.transformer")
    sub = parser.add_subparsers(dest="cmd")
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "transformer":
        argv = ["transformer", *argv]
    args = parser.parse_args(argv)
    return args.func(args)
