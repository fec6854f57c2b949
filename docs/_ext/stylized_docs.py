"""Sphinx extension of the stylized docs: generated pages, and every example executed by the build.

* ``builder-inited``: :func:`gen_claims.generate` writes the claim pages and the experiments' API pages from
  the check registry (``docs/_generated/``); then every ``docs/examples/*.py`` runs, each in its own process
  and all at once (``python EXAMPLE OUT_DIR``, ``OUT_DIR = docs/_generated/examples/<name>``, cwd the
  repository root, output in ``OUT_DIR.log``), and the build waits for them before it reads a page, so a
  page can show what an example drew or printed.
* ``env-updated`` (every page read): the ``>>>`` examples of the docstrings of every module an
  ``automodule`` documented run in one more process, with the module's globals and ``ELLIPSIS``, as
  ``pytest --doctest-modules`` runs them.
* An example that exits non-zero (or outlives ``stylized_examples_timeout`` seconds) is reported as an error
  with the tail of its output, and the build's exit status becomes 1, with or without ``-W``; the
  docstring examples are awaited at ``build-finished`` and reported the same way.
* ``missing-reference``: a Python reference to ``stylized.NAME`` (or any module path) that is documented under
  another name — the top-level re-exports, the closed forms re-exported by ``stylized.theory`` — links to
  the page that documents the same object.
* ``autodoc-process-docstring`` (before numpydoc's): a section headed ``Example`` (singular, as 36
  docstrings write it) is renamed ``Examples``; numpydoc would otherwise drop it as an unknown section.

Config: ``stylized_examples`` (glob, ``*.py``), ``stylized_examples_dir`` (default ``docs/examples``),
``stylized_examples_timeout`` (seconds, 900), ``stylized_run_doctests`` (True).
``STYLIZED_DOCS_SKIP_EXAMPLES=1`` skips both (for a quick look at a page, whose example figures then
warn as missing; ``make docs`` never sets it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent

_DOCTEST_RUNNER = r"""
import doctest, importlib, sys
failed = tried = 0
for name in sys.argv[1:]:
    mod = importlib.import_module(name)
    r = doctest.testmod(mod, optionflags=doctest.ELLIPSIS, report=True)
    failed += r.failed
    tried += r.attempted
    print(f"{name}: {r.attempted} examples, {r.failed} failed", flush=True)
print(f"docstring examples: {tried} run, {failed} failed in {len(sys.argv) - 1} modules")
sys.exit(1 if failed else 0)
"""


class _Job:
    def __init__(self, name: str, cmd: list[str], log: Path, env: dict):
        self.name, self.log, self.t0 = name, log, time.perf_counter()
        log.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(log, "w")  # noqa: SIM115 (closed in wait)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self._fh, stderr=subprocess.STDOUT, env=env,
                                     stdin=subprocess.DEVNULL)

    def wait(self, deadline: float) -> tuple[int | None, float]:
        try:
            rc = self.proc.wait(timeout=max(1.0, deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self._fh.close()
        return rc, time.perf_counter() - self.t0

    def tail(self, n: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def _env() -> dict:
    env = dict(os.environ)
    env.setdefault("MPLBACKEND", "Agg")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _skip() -> bool:
    return os.environ.get("STYLIZED_DOCS_SKIP_EXAMPLES", "") not in ("", "0")


def _on_builder_inited(app) -> None:
    sys.path.insert(0, str(DOCS))
    import gen_claims

    t0 = time.perf_counter()
    pages = gen_claims.generate(DOCS / "_generated")
    logger.info(f"stylized_docs: {len(pages)} generated pages in {time.perf_counter() - t0:.1f} s")
    app._stylized_jobs, app._stylized_failed = [], []
    if _skip():
        logger.info("stylized_docs: STYLIZED_DOCS_SKIP_EXAMPLES is set: examples not run")
        return
    out = DOCS / "_generated" / "examples"
    jobs = []
    for path in sorted(Path(app.config.stylized_examples_dir or DOCS / "examples").glob(app.config.stylized_examples)):
        dest = out / path.stem
        if dest.exists():
            shutil.rmtree(dest)  # a fresh folder each build: what a page shows is this build's
        dest.mkdir(parents=True)
        jobs.append(_Job(os.path.relpath(path, ROOT), [sys.executable, str(path), str(dest)],
                         out / f"{path.stem}.log", _env()))
    logger.info(f"stylized_docs: running {len(jobs)} examples from docs/examples/ ...")
    _finish(app, jobs, time.perf_counter() + app.config.stylized_examples_timeout)


def _on_env_updated(app, env):
    if _skip() or not app.config.stylized_run_doctests:
        return []
    mods = sorted(env.domaindata.get("py", {}).get("modules", {}))  # every documented module, re-read or not
    if mods:
        app._stylized_jobs.append(_Job("the docstring examples", [sys.executable, "-c", _DOCTEST_RUNNER, *mods],
                                       DOCS / "_generated" / "examples" / "docstring_examples.log", _env()))
    return []


def _examples_heading(app, what, name, obj, options, lines) -> None:
    """``Example`` / ``-------`` → ``Examples`` / ``--------`` (numpydoc knows only the plural)."""
    for i in range(len(lines) - 1):
        head, rule = lines[i].strip(), lines[i + 1].strip()
        if head == "Example" and rule and set(rule) == {"-"}:
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            lines[i], lines[i + 1] = indent + "Examples", indent + "-" * len("Examples")


def _lookup(dotted: str):
    """The object named ``dotted`` (``pkg.mod.attr.attr``), or None."""
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:  # not a module (or one that does not import): try a shorter prefix
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _resolve_by_identity(app, env, node, contnode):
    """``missing-reference``: a Python reference to a name that is documented under another module (the top-level
    ``stylized.run`` is documented as ``stylized.harness.api.run``, ``stylized.theory.value_theory.tilt_floor`` as
    ``stylized.theory.tilt_floor``) links to the page that documents the same object."""
    from sphinx.util.nodes import make_refnode

    if node.get("refdomain") != "py" or not node.get("reftarget", "").startswith(("stylized.", "simulations.")):
        return None
    obj = _lookup(node["reftarget"])
    if obj is None or isinstance(obj, (int, float, str, bool, tuple)) or obj is ...:
        return None
    objects = env.domaindata["py"]["objects"]
    index = getattr(env, "_stylized_by_id", None)
    if index is None or index[0] != len(objects):
        by_id: dict[int, list[str]] = {}
        for fullname in objects:
            found = _lookup(fullname)
            if found is not None and not isinstance(found, (int, float, str, bool, tuple)):
                by_id.setdefault(id(found), []).append(fullname)
        index = env._stylized_by_id = (len(objects), by_id)
    names = index[1].get(id(obj))
    if not names:
        return None
    home = getattr(obj, "__module__", None)
    best = next((n for n in names if n.rpartition(".")[0] == home), names[0])  # where it is defined, if documented
    entry = objects[best]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, best)


def _finish(app, jobs: list[_Job], deadline: float) -> None:
    """Wait for every job (each timed to its own end), then report each."""
    pending = list(jobs)
    while pending and time.perf_counter() < deadline:
        for job in [j for j in pending if j.proc.poll() is not None]:
            pending.remove(job)
            job.seconds = time.perf_counter() - job.t0
        time.sleep(0.2)
    for job in jobs:
        rc, seconds = job.wait(deadline)
        seconds = getattr(job, "seconds", seconds)
        if rc == 0:
            logger.info(f"stylized_docs: {job.name} passed ({seconds:.1f} s; log {job.log})")
        else:
            why = "timed out" if rc is None else f"exited {rc}"
            app._stylized_failed.append(job.name)
            logger.error(f"stylized_docs: {job.name} {why} (log {job.log}):\n{job.tail()}")


def _on_build_finished(app, exception) -> None:
    _finish(app, getattr(app, "_stylized_jobs", []), time.perf_counter() + app.config.stylized_examples_timeout)
    if getattr(app, "_stylized_failed", None):
        logger.error(f"stylized_docs: {len(app._stylized_failed)} example(s) failed: {', '.join(app._stylized_failed)}")
        if exception is None:
            app.statuscode = 1


def setup(app):
    app.add_config_value("stylized_examples", "*.py", "env")
    app.add_config_value("stylized_examples_dir", "", "env")  # default docs/examples
    app.add_config_value("stylized_examples_timeout", 900, "env")
    app.add_config_value("stylized_run_doctests", True, "env")
    app.connect("builder-inited", _on_builder_inited)
    app.connect("autodoc-process-docstring", _examples_heading, priority=400)  # numpydoc's runs at 500
    app.connect("missing-reference", _resolve_by_identity)
    app.connect("env-updated", _on_env_updated)
    app.connect("build-finished", _on_build_finished)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
