"""Print the import graph of the project's packages and check that dependencies point one way.

Layers, lowest first: ``stylized`` (the library) ← ``simulations`` (experiments, the transformer) ←
``benchmarks``; the CLI reaches the upper layers only through entry points.  Inside ``stylized`` the
sub-packages are layers too, lowest first (``STYLIZED_LAYERS``)::

    core ← laws ← theory ← engine ← harness ← cli

``core`` (errors, options, argument checks, backends, random streams, estimators); ``laws`` (the step-law
protocol and the built-in laws); ``theory`` (closed forms, evaluated on a law); ``engine`` (transport,
kernels, sampling, scores, values, far mass); ``harness`` (check registry, results, report, falsify,
``run``, sweeps, plotting, ``check_law``); ``cli``.  A module may import its own and lower layers.  The one
exception, by design: a step law's *methods* are its exact overrides and fast paths (the
``rv_continuous`` pattern), so code in ``laws`` may import ``theory`` and ``engine`` inside a function,
never at module level.  Everything else reaches a law only through the protocol.  The package root
(``stylized/__init__``: the version and the lazy public names) is loaded before any submodule and may be
imported from anywhere.

Every ``import`` and ``from … import`` of a project module is read with :mod:`ast` (module level and
inside functions), so lazy imports count too.  Exit status 1 if a module imports a higher layer (a
higher project package, or a higher ``stylized`` sub-package outside the exception above) or if the
imports form a cycle: module-level imports inside ``stylized``, or imports at module level and inside
functions together, in ``stylized``, ``simulations`` and ``benchmarks``.

Usage: ``python scripts/import_graph.py [--dot] [--root DIR]``  (``--dot``: Graphviz
instead of text; ``--root``: the checkout to read, by default this one).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's library, also when run as ``python scripts/import_graph.py``
from stylized.harness import code_graph  # noqa: E402

LAYERS = {"stylized": 0, "simulations": 1, "benchmarks": 2}
STYLIZED_LAYERS = {"core": 0, "laws": 1, "theory": 2, "engine": 3, "harness": 4, "cli": 5}
#: (from, to) sub-package pairs allowed upward inside functions only (a law's overrides; see the docstring)
LAZY_UP = {("laws", "theory"), ("laws", "engine")}


def sub_layer(module: str) -> tuple[str, int] | None:
    """``(sub-package, layer)`` of a ``stylized`` module; ``None`` for the package root and its private
    top-level modules (``__main__`` runs the CLI), which sit above every layer."""
    parts = module.split(".")
    if parts[0] != "stylized" or len(parts) < 2 or parts[1] not in STYLIZED_LAYERS:
        return None
    return parts[1], STYLIZED_LAYERS[parts[1]]


def upward_inside_stylized(a: str, b: str, top: bool) -> bool:
    """Whether ``a`` importing ``b`` breaks the sub-package layers (module-level or not)."""
    if b == "stylized":  # the package root: version and lazy names, always loaded first
        return False
    la, lb = sub_layer(a), sub_layer(b)
    if la is None:
        return False
    if lb is None:  # a layer reaching the private top-level modules
        return True
    if lb[1] <= la[1]:
        return False
    return top or (la[0], lb[0]) not in LAZY_UP


def module_name(path: Path, root: Path = ROOT) -> str:
    return code_graph.module_name(path, root)


def imports_of(path: Path, root: Path = ROOT) -> list[tuple[str, bool]]:
    """``(imported module, at module level)`` for every project import in ``path`` (the library's parser,
    :func:`stylized.harness.code_graph.imports_of`, which the staleness hash uses too)."""
    return code_graph.imports_of(path, root)


def graph(root: Path = ROOT) -> dict[str, set[tuple[str, bool]]]:
    """Module → ``{(imported project module, at module level)}`` for every module of the packages under ``root``."""
    g: dict[str, set[tuple[str, bool]]] = defaultdict(set)
    for pkg in LAYERS:
        for path in sorted((root / pkg).rglob("*.py")):
            me = module_name(path, root)
            for target, top in imports_of(path, root):
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
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to read (default: this one)")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    g = graph(root)
    upward = [(a, b) for a, ts in g.items() for b, _ in ts if LAYERS[b.split(".")[0]] > LAYERS[a.split(".")[0]]]
    upward += sorted((a, b) for a, ts in g.items() for b, top in ts if upward_inside_stylized(a, b, top))
    lazy_up = sorted((a, b) for a, ts in g.items() for b, top in ts
                     if not top and (sa := sub_layer(a)) and (sb := sub_layer(b)) and sb[1] > sa[1])
    lib_top = {a: {b for b, top in ts if top and b.startswith("stylized")} for a, ts in g.items()
               if a.startswith("stylized")}
    cyc = cycles(lib_top)
    every = {a: {b for b, _ in ts} for a, ts in g.items()}  # imports inside functions too
    lazy_cyc = cycles({a: {b for b in bs if b.startswith("stylized")} for a, bs in every.items()
                       if a.startswith("stylized")})
    project_cyc = [c for c in cycles(every) if not c[0].startswith("stylized")]
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
        print(f"allowed lazy imports up (a step law's methods reaching its overrides): {len(lazy_up)}")
        layers = " <- ".join(STYLIZED_LAYERS)
        for name in STYLIZED_LAYERS:
            n = len(list((root / "stylized" / name).glob("*.py")))
            print(f"  stylized/{name}/: {n} modules")
        print(f"stylized layers: {layers}")
        print(f"module-level import cycles inside stylized: {len(cyc)}")
        for c in cyc:
            print("  " + " <-> ".join(c))
        for where, found in (("stylized", lazy_cyc), ("simulations and benchmarks", project_cyc)):
            print(f"import cycles inside {where} counting imports inside functions (groups of modules that "
                  f"reach each other; an error): {len(found)}")
            for c in found:
                inner = sorted(f"{a} -> {b}{'' if top else ' (in a function)'}" for a in c for b, top in g[a] if b in c)
                print(f"  {len(c)} modules, {len(inner)} imports: " + "; ".join(inner))
    return 1 if upward or cyc or lazy_cyc or project_cyc else 0


if __name__ == "__main__":
    raise SystemExit(main())
