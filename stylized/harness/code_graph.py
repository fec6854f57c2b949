"""The project's import graph read from source with :mod:`ast`: module level and inside functions.

Shared by the staleness hash (:func:`~stylized.harness.results.code_hash` covers every ``simulations``
module a check imports, transitively) and ``scripts/import_graph.py`` (layers and cycles).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

__all__ = ["module_name", "module_path", "imports_of", "transitive_imports"]

#: Top-level packages of the project (others are third-party and not followed).
PROJECT = ("stylized", "simulations", "benchmarks")


def module_name(path: Path, root: Path) -> str:
    """Dotted name of the file ``path`` under ``root`` (a package's ``__init__.py`` is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_path(name: str, root: Path) -> Path | None:
    """The source file of the project module ``name`` under ``root`` (module or package), or ``None``."""
    base = root.joinpath(*name.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def imports_of(path: Path, root: Path) -> list[tuple[str, bool]]:
    """``(imported project module, at module level)`` for every import in ``path``.

    ``from pkg import name`` yields ``pkg.name`` when that is a module of the project (a submodule
    imported by name), else ``pkg``; relative imports are resolved against ``path``'s package.
    """
    return list(_imports(path.resolve(), root.resolve(), path.stat().st_mtime_ns))


@lru_cache(maxsize=4096)
def _imports(path: Path, root: Path, _mtime: int) -> tuple[tuple[str, bool], ...]:
    tree = ast.parse(path.read_bytes(), str(path))
    me = module_name(path, root)
    pkg = me if path.name == "__init__.py" else me.rpartition(".")[0]
    top = {id(n) for n in tree.body}
    for node in tree.body:  # ``if TYPE_CHECKING:``/``try:`` blocks at module level are module level too
        if isinstance(node, (ast.If, ast.Try)):
            top |= {id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    out: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.rsplit(".", node.level - 1)[0] if node.level > 1 else pkg
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names if module_path(f"{mod}.{a.name}", root) is not None]
            names = subs + ([mod] if len(subs) < len(node.names) else [])
        else:
            continue
        for name in names:
            if name.split(".")[0] in PROJECT:
                out.append((name, id(node) in top))
    return tuple(out)


def transitive_imports(module: str, root: Path, within: str = "simulations") -> list[str]:
    """Every module of package ``within`` that ``module`` imports, directly or through others of ``within``
    (module level and inside functions), sorted; ``module`` itself and the package root (which only lists
    the check modules) excluded."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        path = module_path(name, root)
        if path is None:
            continue
        for t, _ in imports_of(path, root):
            if t.split(".")[0] == within and t != within and t not in seen and t != module:
                seen.add(t)
                todo.append(t)
    return sorted(seen)
