"""Canonical or exploratory: where a transformer command's results go.

Committed results are written only by a command's full default run.  :func:`destination` compares the parsed
options with the parser's defaults (kept on the namespace by :func:`remember_defaults`): a run that differs in
an option that changes the numbers (a subset of variants or seeds, fewer trials, other steps), or that leaves
something out (``--no-train`` with checkpoints missing: ``incomplete``), writes under
``<results>/transformer/exploratory/<command>/`` — results and figures — and never replaces a committed file.
Options that change no number (threads, workers, the preset, which names its own committed folder) are neutral.
One line says where the results go and why.

The folders themselves: :func:`results_root` (``<results>/transformer``), :func:`run_root` (a command's folder
for a preset), :func:`command_outputs` (its results stem and figure) and :func:`checkpoint_path`.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from stylized.harness.results import figures_dir, results_dir

__all__ = ["DEFAULTS", "NEUTRAL", "COMMAND_NEUTRAL", "Destination", "results_root", "run_root", "command_outputs",
           "checkpoint_path", "remember_defaults", "deviations", "exploratory_root", "destination", "settings_folder",
           "split_roots"]

#: the namespace attribute holding a sub-command's option defaults (set by :func:`remember_defaults`)
DEFAULTS = "_option_defaults"
#: options that change no result: how the work is scheduled, where the user asked for it, the preset's own folder;
#: ``--no-train`` changes a result only when a checkpoint is missing, which the command passes as ``incomplete``
NEUTRAL = frozenset({"threads", "workers", "func", "transformer_cmd", "cmd", "preset", "results_dir", "figure",
                     "no_cache", "json", "out", "no_train", DEFAULTS})
#: per command, options that name what is run rather than change it: train's variant and seed name a checkpoint
#: (resuming it gives the same weights); compare's --tokenizer bpe has its own committed folder (runs/<preset>-bpe/)
COMMAND_NEUTRAL = {"train": ("variant", "seed", "resume", "force"), "compare": ("tokenizer",)}


def results_root() -> Path:
    """``<results>/transformer`` (:func:`stylized.harness.results.results_dir`: ``--out``, the checkout, or ``./results``)."""
    return results_dir() / "transformer"


def run_root(preset: str, results_dir: str | os.PathLike | None) -> tuple[Path, bool]:
    """(results folder of a command, canonical?): ``results_dir`` when given; the committed folder
    (:func:`results_root`) for the cpu preset, which alone is canonical; ``runs/<preset>/`` otherwise."""
    if results_dir:
        return Path(results_dir), False
    return (results_root(), True) if preset == "cpu" else (results_root() / "runs" / preset, False)


def command_outputs(name: str, figure: str, preset: str, results_dir: str | os.PathLike | None
                    ) -> tuple[Path, Path, Path, bool]:
    """(results folder, results file stem ``<name>_<preset>``, figure, canonical?): a canonical run draws
    ``figure`` into the figures folder, any other run beside its results."""
    root, canonical = run_root(preset, results_dir)
    return root, root / f"{name}_{preset}", (figures_dir() if canonical else root) / figure, canonical


def checkpoint_path(preset: str, variant: str, seed: int = 0,
                    results_dir: str | os.PathLike | None = None) -> Path:
    """``<root>/checkpoints/<preset>/<variant>[-s<seed>].pt`` (``root``: ``results_dir``, else :func:`results_root`)."""
    root = Path(results_dir) if results_dir else results_root()
    name = variant if seed == 0 else f"{variant}-s{seed}"
    return root / "checkpoints" / preset / f"{name}.pt"


@dataclass(frozen=True)
class Destination:
    """Where a run's results (``root``) and figures (``figures``) go, whether that is the committed place, and why."""

    command: str
    root: Path
    figures: Path
    canonical: bool
    why: str
    settings: bool = False  # exploratory in an option that changes the training: checkpoints belong there too


def remember_defaults(sub: argparse._SubParsersAction) -> None:
    """Keep every sub-command's option defaults on its namespace (``args._option_defaults``)."""
    for name, sp in sub.choices.items():
        defaults = {a.dest: a.default for a in sp._actions if a.dest != "help" and a.default is not argparse.SUPPRESS}
        sp.set_defaults(**{DEFAULTS: {**defaults, "__command__": name}})


def deviations(args: argparse.Namespace, neutral: tuple[str, ...] = ()) -> list[str]:
    """The options of ``args`` that differ from their defaults and change the numbers (as ``--name``)."""
    defaults = dict(getattr(args, DEFAULTS, None) or {})
    neutral = (*neutral, *COMMAND_NEUTRAL.get(defaults.pop("__command__", ""), ()))
    out = []
    for k, d in defaults.items():
        if k in NEUTRAL or k in neutral:
            continue
        v = getattr(args, k, d)
        if v != d and not (isinstance(v, (list, tuple)) and isinstance(d, (list, tuple)) and list(v) == list(d)):
            out.append("--" + k.replace("_", "-"))
    return out


def exploratory_root(command: str) -> Path:
    """``<results>/transformer/exploratory/<command>``: everything a non-default run writes."""
    return results_root() / "exploratory" / command


def destination(command: str, args: argparse.Namespace, *, root: Path | None = None, figures: Path | None = None,
                neutral: tuple[str, ...] = (), incomplete: str | None = None, subsets: tuple[str, ...] | None = None,
                log=print) -> Destination:
    """Where ``command`` run with ``args`` writes: ``root`` / ``figures`` (default: the committed results folder and
    ``figures/``) for the full default run, :func:`exploratory_root` otherwise; prints one line saying which.

    ``subsets`` (a command that trains): the options that only select runs (variants, seeds); a run that differs
    in any other option gets a folder of its own under the exploratory one (:func:`settings_folder`,
    ``settings=True``), checkpoints included."""
    given = getattr(args, "results_dir", None)
    if given:
        d = Destination(command, Path(given), Path(given), False, "--results-dir given")
        log(f"[{command}] results under --results-dir {d.root}")
        return d
    differ = deviations(args, neutral)
    reasons = ([f"{', '.join(differ)} differ{'s' if len(differ) == 1 else ''} from the default"] if differ else []) \
        + ([incomplete] if incomplete else [])
    if not reasons:
        d = Destination(command, Path(root or results_root()), Path(figures or figures_dir()), True, "full default run")
        log(f"[{command}] full default run: results in {d.root}")
        return d
    where = exploratory_root(command)
    settings = subsets is not None and bool(deviations(args, (*neutral, *subsets)))
    if settings:
        where = settings_folder(where, args, (*neutral, *subsets))
    d = Destination(command, where, where, False, "; ".join(reasons), settings)
    log(f"[{command}] exploratory run ({d.why}): results under {where}; committed results untouched")
    return d


def settings_folder(root: Path, args: argparse.Namespace, neutral: tuple[str, ...] = ()) -> Path:
    """``root/<option-value_…>``: a folder of its own for each choice of the options that change the training (so
    that a run with ``--steps 2`` never resumes the checkpoint of one with ``--steps 3``)."""
    import hashlib
    import re

    parts = [f"{k[2:]}-{getattr(args, k[2:].replace('-', '_'))}" for k in deviations(args, neutral)]
    tag = re.sub(r"[^A-Za-z0-9.=_-]+", "_", "_".join(parts)) or "default"
    if len(tag) > 80:
        tag = tag[:60] + "-" + hashlib.sha256(tag.encode()).hexdigest()[:12]
    return root / tag


def split_roots(command: str, args: argparse.Namespace, subsets: tuple[str, ...], *, neutral: tuple[str, ...] = (),
                preset: str = "cpu", log=print) -> tuple[str | None, Path | None]:
    """(results root, output root) of a command that trains and evaluates (``compare``, ``combined``).

    The full default run: ``(args.results_dir, None)``, as before.  A run with other settings (steps, data…) keeps
    everything, checkpoints included, under its exploratory folder: ``(that folder, None)``.  A subset run (only
    options in ``subsets`` differ: variants, seeds) reuses the committed checkpoints and caches and writes its
    results alone there: ``(None, that folder)``."""
    dest = destination(command, args, root=run_root(preset, None)[0], neutral=neutral, subsets=subsets, log=log)
    if dest.canonical or getattr(args, "results_dir", None):
        return getattr(args, "results_dir", None), None
    return (str(dest.root), None) if dest.settings else (None, dest.root)
