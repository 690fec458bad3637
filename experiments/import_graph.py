"""The import graph of jaxplace/, read with `ast` (nothing is imported).

Every `import jaxplace...` / `from jaxplace... import ...` is collected, at module level
and inside functions. Lazy loads by string (`importlib.import_module("jaxplace.x")`,
registry entries "module:attr") are not imports here: they are how a package face or a
registry defers loading, and they carry no static dependency.

Prints:
- imports of jaxplace itself: total, inside functions;
- cycles between subpackages / top-level modules (strongly connected components of the
  graph whose nodes are `jaxplace.<x>`, x a subpackage or a top-level module);
- cycles between modules of one subpackage;
- `_private` modules or names imported across subpackages;
- with --layers, the imports that go against the layer order of tests/repo/test_import_layers.py.

Run from the repository root:  python experiments/import_graph.py [--layers] [--edges]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "jaxplace"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py")) if "__pycache__" not in p.parts}


class _Collector(ast.NodeVisitor):
    """Imports of jaxplace in one file: (target module, imported names, in function, line)."""

    def __init__(self, modules: set[str]):
        self.modules = modules
        self.depth = 0
        self.found: list[tuple[str, tuple[str, ...], bool, int]] = []

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node: ast.Import):
        for alias in node.names:
            if alias.name == "jaxplace" or alias.name.startswith("jaxplace."):
                self.found.append((alias.name, (), self.depth > 0, node.lineno))

    def visit_ImportFrom(self, node: ast.ImportFrom):
        mod = node.module or ""
        if node.level or not (mod == "jaxplace" or mod.startswith("jaxplace.")):
            return
        names = []
        for alias in node.names:
            sub = f"{mod}.{alias.name}"
            if sub in self.modules:  # `from pkg import submodule`
                self.found.append((sub, (), self.depth > 0, node.lineno))
            else:
                names.append(alias.name)
        if names:
            self.found.append((mod, tuple(names), self.depth > 0, node.lineno))


def collect() -> list[dict]:
    """One row per (importer, imported module) statement."""
    modules = all_modules()
    rows = []
    for name, path in modules.items():
        col = _Collector(set(modules))
        col.visit(ast.parse(path.read_text(), filename=str(path)))
        for target, names, in_function, line in col.found:
            rows.append(dict(importer=name, target=target, names=names,
                             in_function=in_function, line=line))
    return rows


def _face_names() -> dict[str, str]:
    """name -> module for what `jaxplace/__init__.py` gives: its eager imports, its
    `_LAZY` table and its lazily loaded subpackages."""
    tree = ast.parse((PKG / "__init__.py").read_text())
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jaxplace"):
            for alias in node.names:
                out[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "_LAZY":
                out.update(ast.literal_eval(node.value))
            elif name == "_SUBPACKAGES":
                out.update({s: f"jaxplace.{s}" for s in ast.literal_eval(node.value)})
    return out


def face_uses() -> list[dict]:
    """Uses of `jp.<name>` after `import jaxplace as jp` inside jaxplace/ (the face is a
    lazy loader by name: these are dependencies that no import statement shows)."""
    face, modules, rows = _face_names(), all_modules(), []
    for name, path in modules.items():
        if name == "jaxplace":
            continue
        tree = ast.parse(path.read_text())
        aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                   for a in node.names if a.name == "jaxplace"}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases):
                target = face.get(node.attr) or (f"jaxplace.{node.attr}"
                                                 if f"jaxplace.{node.attr}" in modules else None)
                if target:
                    rows.append(dict(importer=name, target=target, attr=node.attr,
                                     line=node.lineno))
    return rows


def unit(module: str) -> str:
    """The subpackage or top-level module a module belongs to ("jaxplace" for the face)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def sccs(nodes, edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return out


def short(module: str) -> str:
    return module.removeprefix("jaxplace.") or "jaxplace"


def report(rows, show_edges: bool, layers=None) -> None:
    in_fn = [r for r in rows if r["in_function"]]
    stmts = {(r["importer"], r["line"]) for r in rows}
    fn_stmts = {(r["importer"], r["line"]) for r in in_fn}
    print(f"modules: {len(all_modules())}; import statements of jaxplace: {len(stmts)} "
          f"({len(rows)} imported modules); inside functions: {len(fn_stmts)} statements "
          f"({len(in_fn)} imported modules)")
    fn_units = defaultdict(int)
    for r in in_fn:
        fn_units[short(unit(r["importer"]))] += 1
    print("  inside functions, by importing unit: " + ", ".join(
        f"{u} {n}" for u, n in sorted(fn_units.items(), key=lambda t: -t[1])))

    # subpackage graph (the package face `jaxplace` loads lazily; it is left out)
    edges: dict[str, set[str]] = defaultdict(set)
    why: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        a, b = unit(r["importer"]), unit(r["target"])
        if a != b and "jaxplace" not in (a, b):
            edges[a].add(b)
            why[a, b].append(r)
    units = {unit(m) for m in all_modules()} - {"jaxplace"}
    comps = sccs(units, edges)
    print(f"\ncycles between subpackages / top-level modules: {len(comps)}")
    for c in comps:
        inside = sum(1 for a in c for b in edges[a] if b in c)
        print(f"  {len(c)} units, {inside} edges: " + ", ".join(short(u) for u in c))

    # module graph inside each subpackage
    medges: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        a, b = r["importer"], r["target"]
        if a != b and unit(a) == unit(b) and unit(a) != "jaxplace":
            medges[a].add(b)
    mcomps = sccs(set(all_modules()), medges)
    print(f"\ncycles between modules of one subpackage: {len(mcomps)}")
    for c in mcomps:
        print("  " + ", ".join(short(m) for m in c))
        for a in c:
            for b in sorted(medges[a] & set(c)):
                lines = [str(r["line"]) + ("f" if r["in_function"] else "")
                         for r in rows if r["importer"] == a and r["target"] == b]
                print(f"    {short(a)} -> {short(b)} (line {', '.join(lines)})")

    # private names / modules across subpackages
    priv = []
    for r in rows:
        a, b = unit(r["importer"]), unit(r["target"])
        if a == b:
            continue
        mod_private = any(is_private(p) for p in r["target"].split("."))
        names = [n for n in r["names"] if is_private(n)]
        if mod_private or names:
            priv.append((r, mod_private, names))
    print(f"\n_private imports across subpackages: {len(priv)} statements")
    for r, _, names in priv:
        what = r["target"] + (f" import {', '.join(names)}" if names else "")
        print(f"  {short(r['importer'])}:{r['line']}{' (in function)' if r['in_function'] else ''}"
              f" <- {what}")

    if show_edges:
        print("\nedges between units (importer -> imported: statements, of which in functions)")
        for (a, b), rs in sorted(why.items()):
            nf = sum(r["in_function"] for r in rs)
            print(f"  {short(a)} -> {short(b)}: {len(rs)} ({nf} in functions)")

    if layers is not None:
        upward = layers.upward_imports(layers.collect_edges())
        print("\nlayer order (tests/repo/test_import_layers.py LAYERS, lowest first):\n  "
              + ", ".join(layers.LAYERS))
        print(f"layer violations (an earlier layer imports a later one): {len(upward)} pairs, "
              f"{sum(map(len, upward.values()))} statements; allowlist ALLOWED_UPWARD: "
              f"{len(layers.ALLOWED_UPWARD)} pairs; allowed module cycles: "
              f"{len(layers.ALLOWED_MODULE_CYCLES)}")
        for (a, b), sites in sorted(upward.items()):
            print(f"  {a} -> {b}: {', '.join(sites[:3])}{' ...' if len(sites) > 3 else ''}")
        via = defaultdict(list)
        rank = {e: i for i, e in enumerate(layers.LAYERS)}
        for r in face_uses():
            a, b = layers._layer(r["importer"]), layers._layer(r["target"])
            if a and b and rank[b] > rank[a]:
                via[a, b].append(f"{short(r['importer'])}:{r['line']} jp.{r['attr']}")
        print(f"upward uses through the package face (`jp.x` after `import jaxplace as jp`; "
              f"not imports, not in the test): {len(via)} pairs")
        for (a, b), sites in sorted(via.items()):
            print(f"  {a} -> {b}: {', '.join(sites[:3])}{' ...' if len(sites) > 3 else ''}")
        ledges: dict[str, set[str]] = defaultdict(set)
        for importer, target, _, _ in layers.collect_edges():
            a, b = layers._layer(importer), layers._layer(target)
            if a and b and a != b:
                ledges[a].add(b)
        comps = sccs(set(layers.LAYERS), ledges)
        print(f"cycles between layers: {len(comps)}")
        for c in comps:
            print("  " + ", ".join(c))


def _layers():
    """tests/repo/test_import_layers.py, loaded from its file (its LAYERS and helpers)."""
    path = ROOT / "tests" / "repo" / "test_import_layers.py"
    spec = importlib.util.spec_from_file_location("_tl", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", action="store_true", help="list every edge between units")
    ap.add_argument("--layers", action="store_true",
                    help="check the layer order of tests/repo/test_import_layers.py")
    args = ap.parse_args(argv)
    report(collect(), args.edges, _layers() if args.layers else None)


if __name__ == "__main__":
    sys.exit(main())
