"""Print the import graph of the project's packages and check that dependencies point one way.

Layers, lowest first: ``stylized`` (the library) ← ``simulations`` (experiments, the transformer) ←
``benchmarks``; the CLI reaches the upper layers only through entry points.  Every ``import`` and
``from … import`` of a project module is read with :mod:`ast` (module level and inside functions), so
lazy imports count too.  Exit status 1 if a module imports a higher layer or if the module-level imports
inside ``stylized`` form a cycle.

Usage: ``python scripts/import_graph.py [--dot]``  (``--dot``: Graphviz instead of text).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"stylized": 0, "simulations": 1, "benchmarks": 2}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[tuple[str, bool]]:
    """``(imported module, at module level)`` for every project import in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    pkg = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.rsplit(".", node.level - 1)[0] if node.level > 1 else pkg
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            names = [mod]
        else:
            continue
        for name in names:
            if name.split(".")[0] in LAYERS:
                out.append((name, id(node) in top))
    return out


def graph() -> dict[str, set[tuple[str, bool]]]:
    g: dict[str, set[tuple[str, bool]]] = defaultdict(set)
    for pkg in LAYERS:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            me = module_name(path)
            for target, top in imports_of(path):
                if target != me:
                    g[me].add((target, top))
    return g


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dot", action="store_true", help="print Graphviz DOT instead of text")
    args = ap.parse_args(argv)
    g = graph()
    upward = [(a, b) for a, ts in g.items() for b, _ in ts if LAYERS[b.split(".")[0]] > LAYERS[a.split(".")[0]]]
    lib_top = {a: {b for b, top in ts if top and b.startswith("stylized")} for a, ts in g.items()
               if a.startswith("stylized")}
    cyc = cycles(lib_top)
    if args.dot:
        print("digraph imports {\n  rankdir=BT; node [shape=box, fontsize=10];")
        for a in sorted(g):
            for b, top in sorted(g[a]):
                print(f'  "{a}" -> "{b}"{"" if top else " [style=dashed]"};')
        print("}")
    else:
        for a in sorted(g):
            deps = sorted({b if top else f"({b})" for b, top in g[a]})
            print(f"{a} -> {', '.join(deps)}")
        print(f"\n{len(g)} modules with project imports; (m) = imported inside a function")
        print(f"upward imports (a lower layer importing a higher one): {len(upward)}")
        for a, b in upward:
            print(f"  {a} -> {b}")
        print(f"module-level import cycles inside stylized: {len(cyc)}")
        for c in cyc:
            print("  " + " <-> ".join(c))
    return 1 if upward or cyc else 0


if __name__ == "__main__":
    raise SystemExit(main())
