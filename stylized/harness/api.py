"""Run a paper check from Python: ``stylized.run(name, **options)`` returns a :class:`Result`.

The options and their defaults are the command line's (``stylized check NAME --help``), so
``stylized.run("score-gap", d=64)`` and ``stylized check score-gap --d 64`` run the same
experiment with the same numbers.  Bad options raise :class:`~stylized.InvalidInput` (a ``ValueError``) naming
the option, before any work; anything raised while the check runs reaches the caller unchanged.

Examples
--------
>>> import stylized
>>> r = stylized.run("score-gap", family="householder", d=[16, 64], M=[64, 1024])  # doctest: +SKIP
>>> r.holds, r.params["lam"]  # doctest: +SKIP
(True, 8.0)
>>> r.headline["estimate"], r.headline["ci_low"], r.headline["ci_high"]  # doctest: +SKIP
>>> fig = r.plot()            # a matplotlib Figure; nothing is written  # doctest: +SKIP
>>> text = r.to_json()        # the JSON object of ``stylized check score-gap --json``  # doctest: +SKIP
>>> stylized.defaults("score-gap")["d"]
[16, 32, 64, 128, 256]
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InvalidInput
from .registry import Check, get_check, load_checks
from .results import atomic_write, atomic_write_text, run_check, save_result, use_output_root, validate_run

__all__ = ["run", "Result", "defaults", "check_names", "law_record", "portable"]


def check_names() -> list[str]:
    """Every check ``run`` accepts, in claim order (those reading another command's results included)."""
    return list(load_checks(external=True))


def defaults(name: str) -> dict[str, Any]:
    """The default options of check ``name``: the same as ``stylized check NAME --help`` shows."""
    return get_check(name).defaults()


@dataclass(frozen=True)
class Result:
    """A check's outcome: the command line's JSON object with attribute access.

    Attributes
    ----------
    name, claim : the check (``"score-gap"``) and the paper claim it tests (``"C3"``).
    holds : whether the claim held at these options (a verdict that can fail).
    rows : one dict per measured quantity: the swept options, ``estimate``, ``ci_low``, ``ci_high``
        (95% interval), ``theory`` and ``n_samples``.
    headline : the one number the verdict turns on, with its interval, theory value and verdict text.
    params : every option used (defaults filled in), with ``seed`` and ``backend``.
    seconds : wall time of the run.
    data : the full result object (``meta``: versions and code hash; check-specific extras).
    """

    name: str
    claim: str
    holds: bool
    rows: list[dict]
    headline: dict
    params: dict
    seconds: float
    data: dict = field(repr=False)

    def __repr__(self) -> str:
        return (f"Result({self.name!r}, claim={self.claim!r}, holds={self.holds}, rows={len(self.rows)}, "
                f"seconds={self.seconds:.2f})")

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """The result as one JSON object (``stylized check NAME --json``); also written to ``path`` when given.
        A law given as an object is recorded by :func:`law_record` (its name, class, ``d`` and fields)."""
        text = json.dumps(portable(self.data), allow_nan=False)
        if path is not None:
            atomic_write_text(Path(path), text + "\n")
        return text

    def save(self, out: str | os.PathLike) -> Path:
        """Write ``<name>.json`` and ``<name>.csv`` under ``out/results`` (as ``--out DIR`` does); returns the JSON path."""
        with use_output_root(out) as root:
            return save_result(portable(self.data), root / "results")

    def plot(self, path: str | os.PathLike | None = None):
        """The check's figure as a :class:`matplotlib.figure.Figure` (the first, for checks that draw several).

        Drawn in the project's theme (:func:`stylized.harness.plotting.theme`), as the committed figure is.  Nothing
        is written unless ``path`` is given: then ``path`` ending in ``.png``, ``.pdf`` or nothing gets the
        PNG and the PDF beside it (:func:`stylized.harness.plotting.save`, inside the theme); any other suffix picks
        that format alone.  ``ValueError`` when the check has no figure.
        """
        import matplotlib.pyplot as plt
        from matplotlib.figure import Figure

        from . import plotting as sp

        check = get_check(self.name)
        if check.plot is None:
            raise ValueError(f"name: check {self.name!r} has no figure")
        kept: list[Figure] = []
        real_close = plt.close

        def keep_open(fig=None):  # the check's plot closes what it saved: keep ours instead
            if isinstance(fig, Figure):
                kept.append(fig)
            else:
                real_close(fig)

        with tempfile.TemporaryDirectory() as tmp, sp.theme():
            plt.close = keep_open
            try:
                check.plot(self.data, Path(tmp))
            finally:
                plt.close = real_close
        for extra in kept[1:]:
            real_close(extra)
        if not kept:
            raise ValueError(f"name: check {self.name!r} drew no figure for this result")
        if path is not None:
            fmt = Path(path).suffix.lstrip(".").lower()
            if fmt in ("", "png", "pdf"):
                sp.save(kept[0], path, close=False)
            else:  # another format: that file alone, written atomically in the theme
                with sp.theme():
                    atomic_write(Path(path), lambda tmp: kept[0].savefig(tmp, format=fmt))
        return kept[0]


def law_record(law) -> dict:
    """A law object as JSON: ``{"law": name, "class": "module:Qualname", "d": d, "fields": {…}}`` (fields that are
    not plain JSON are written as their ``repr``)."""
    import dataclasses

    fields = {}
    for f in dataclasses.fields(law) if dataclasses.is_dataclass(law) else ():
        value = getattr(law, f.name, None)
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            value = repr(value)[:200]
        fields[f.name] = value
    cls = type(law)
    return {"law": law.name, "class": f"{cls.__module__}:{cls.__qualname__}", "d": int(law.d), "fields": fields}


def portable(data):
    """``data`` with every law object replaced by its :func:`law_record` (dicts, lists and tuples walked)."""
    from ..laws.base import StepLaw

    if isinstance(data, StepLaw):
        return law_record(data)
    if isinstance(data, dict):
        return {k: portable(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [portable(v) for v in data]
    return data


def _python_name(check: Check, message: str) -> str:
    """``"--trials-near: must be …"`` → ``"trials_near: must be …"`` (the keyword the caller passed)."""
    for o in check.options:
        if message.startswith(o.flag + ":"):
            return o.name + message[len(o.flag):]
    return message


def run(name: str, *, seed: int = 0, backend: str = "numba", progress: bool = False, **options: Any) -> Result:
    """Run paper check ``name`` with ``options`` (each as on the command line, by its Python name).

    Parameters
    ----------
    name : str
        A check name (:func:`check_names`), e.g. ``"score-gap"``, ``"mixing"``, ``"haar-law"``.
    seed : int
        Random seed (default 0, the paper's run).
    backend : str
        Array backend (``"numba"``, ``"numpy"``, ``"cupy"``, ``"dask"``; the check's supported ones).
    progress : bool
        Show progress bars on stderr (default off).
    **options
        The check's options (``stylized.defaults(name)`` lists them with their defaults): numbers,
        lists (``n=[1, 5, 20]``) or the command line's strings (``n="1,5,20"``).

    Returns
    -------
    Result
        ``.holds``, ``.rows``, ``.headline``, ``.params``, ``.plot()``, ``.to_json()``.

    Raises
    ------
    InvalidInput
        (a ``ValueError``) an unknown check or option, a value outside its range, or options that do not fit
        together (the message names the option), before any work.  A user's law that misbehaves (its module,
        factory or ``sample`` raises, its draws are NaN, complex, wrongly shaped or not orthogonal), before or while
        the check runs, is refused ``"family: …"``: an ``InvalidInput`` before any work, an
        :class:`~stylized.core.errors.InvalidLaw` (an ``InvalidInput`` too) once the run has started.
        Anything else raised while the check runs (a bug, a full disk) propagates unchanged.

    Examples
    --------
    >>> import stylized
    >>> stylized.run("mixing", family="warp")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    stylized.InvalidInput: family: ...
    >>> stylized.run("mixing", family="so2-uniform", d=13)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    stylized.InvalidInput: d: d must be even for SO(2) blocks ...
    >>> stylized.run("score-gap", dd=3)
    Traceback (most recent call last):
    ...
    stylized.InvalidInput: unknown option(s) for check 'score-gap': dd
    """
    names = check_names()
    if not isinstance(name, str) or name not in names:
        raise InvalidInput(f"name must be one of {', '.join(names)}; got {name!r}")
    check = get_check(name)
    try:
        validate_run(check, options, seed=seed, backend=backend)  # everything the run refuses, before any work
    except InvalidInput as e:
        raise InvalidInput(_python_name(check, str(e).splitlines()[0] if str(e) else repr(e))) from None
    from ..laws.trust import user_code, user_files  # the laws are imported by the run, not by `import stylized`

    with user_code(user_files(options.get("family")), "family"):  # a user's law failing is bad input
        data = run_check(check, options, seed=seed, backend=backend, progress=progress)
    return Result(name=check.name, claim=check.claim, holds=bool(data["holds"]), rows=data["rows"],
                  headline=data.get("headline", {}), params=data["params"], seconds=data["seconds"], data=data)
