"""The import contract of jaxplace/, checked on the source with `ast` (nothing imported).

Imports inside `if TYPE_CHECKING:` (annotations only) are not dependencies.

- No `_private` module or name of jaxplace is imported from another subpackage: shared
  internals have one public owner (`jaxplace.highs`, `jaxplace.jsonio`, ...).
- No cycle between the modules of one subpackage, except the recorded ones below; and
  no cycle between any modules at all once annotation-only imports are counted too.
- The subpackages and top-level modules form the layers of `LAYERS` (lowest first); an
  import of a later layer from an earlier one, at module level or inside a function, is
  a violation. The violations that exist are recorded in `ALLOWED_UPWARD`: the set may
  only shrink (a new one fails; one that is gone must be removed from the list).
- One lazy-import boundary: a jaxplace module is imported inside a function only where
  what the import runs at module level (package faces included) loads a heavy package
  (`HEAVY_PACKAGES`: jax, HiGHS, onnx, torch, ...), or where the importer is on the
  start-up path (`import jaxplace`, `jaxplace --help`, resolving a `Problem`'s objective)
  and the target is not; the modules that keep others are in `ALLOWED_LIGHT_LAZY` (only
  shrinks). Module-level imports form no cycle at import time, package faces included.

Loads by string (`importlib.import_module`, registry "module:attr" entries) are not
imports: they are how the package face and the registries defer loading. The package
face `jaxplace/__init__.py` is left out of the layer checks for the same reason (the
lazy-import checks follow it: importing any jaxplace module runs it).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

# from its own file, not a tests/ helper: experiments/import_graph.py loads this module
PKG = Path(__file__).resolve().parents[2] / "jaxplace"

#: lowest first. An entry names a subpackage or top-level module (`search`) or, where a
#: package holds two layers, a module in it (`objectives.throughput`); a module belongs to
#: its longest matching entry.
LAYERS = (
    "errors",
    "registry",  # things chosen by name (objectives, methods, bounds, commands): lazy entries
    "jsonio", "highs", "progress", "compile_cache", "code_maps",
    "cmdline",  # argparse types and the output check shared by cli and bench
    "units", "graph", "orders", "partition", "importers", "cluster",
    # the latency model (a Problem builds it) and the per-op times of a graph on each
    # device of a cluster (the latency and the unequal-devices objectives read them)
    "objectives.latency.instance", "cluster.times",
    "objectives",  # the Objective contract, registry and dispatch (api)
    "problem",
    # the throughput objective's cost model, stage table and NumPy oracle: the shared
    # machinery in later layers (decoder, bounds, exact, search) evaluates partitions by them
    "objectives.throughput.cost", "objectives.throughput.report",
    "objectives.throughput.reference", "decoder", "generators",
    "bounds", "objectives.ladder",
    "policy",  # the GNN priority policy: the search methods and the default use it
    "search",
    # the throughput objective's own search (its default search, the MIP polish): on
    # the search core, below `search_many`, which reuses them for many problems
    "objectives.throughput.polish", "objectives.throughput.search",
    "search.many",
    "exact",  # the DP over ideals and the non-contiguous IP: bounds and search methods
    "objectives.latency", "objectives.throughput_unequal", "relax", "multilevel",
    "llm", "formats",
    "objectives.throughput",  # the throughput objective: uses search, bounds, exact, formats
    "spatial", "export",
    "pipeline",  # runnable pipelines: chain plans, JAX stages, schedule timelines
    "objectives.training",  # the training objective: simulates pipeline schedules
    "torch",  # torch.distributed pipelines: plans (training ones through the objective)
    "analysis",
    "view",  # plans drawn: HTML pages, matplotlib figures, Chrome traces
    "calibrate",  # measured device profiles: microbenchmarks, fits, the closed loop
    "testing",  # the conformance check: runs every entry point of an objective
    "bench",  # the benchmarks a user runs (jaxplace bench); research ones: experiments/bench/
    "cli", "__main__",
)

#: (importer layer, imported later layer) pairs that exist today; only ever remove.
ALLOWED_UPWARD: frozenset[tuple[str, str]] = frozenset()

#: cycles between modules of one subpackage that exist today; only ever remove.
ALLOWED_MODULE_CYCLES = ()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _short(module: str) -> str:
    return module.removeprefix("jaxplace.")


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _imports(tree: ast.AST, modules: set[str], typing: bool = False):
    """(imported module, imported names, line) for every jaxplace import in `tree`, at
    any depth (function bodies included; `if TYPE_CHECKING:` blocks only if `typing`)."""
    typing_only = set() if typing else {
        id(n) for block in ast.walk(tree) if _type_checking(block)
        for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "jaxplace" or alias.name.startswith("jaxplace."):
                    yield alias.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and (
                node.module == "jaxplace" or node.module.startswith("jaxplace.")):
            names = []
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in modules:  # `from package import module`
                    yield sub, (), node.lineno
                else:
                    names.append(alias.name)
            if names:
                yield node.module, tuple(names), node.lineno


def _type_checking(node) -> bool:
    """An `if TYPE_CHECKING:` block: imports for annotations only, never run."""
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"))


def collect_edges(typing: bool = False) -> list[tuple[str, str, tuple[str, ...], int]]:
    """(importer, imported, names, line) for every jaxplace import, face left out
    (imports for annotations only too if `typing`)."""
    files = {_module_name(p): p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}
    out = []
    for name, path in sorted(files.items()):
        if name == "jaxplace":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for target, names, line in _imports(tree, set(files), typing):
            if target != "jaxplace":
                out.append((name, target, names, line))
    return out


@pytest.fixture(scope="module")
def edges():
    out = collect_edges()
    assert len(out) > 300, "the parser found too few imports to be reading jaxplace/"
    return out


def _unit(module: str) -> str:
    return _short(module).split(".")[0]


def _layer(module: str) -> str | None:
    m = _short(module)
    hits = [e for e in LAYERS if m == e or m.startswith(e + ".")]
    return max(hits, key=len) if hits else None


def _cycles(nodes, succ: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(succ.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def private_imports(edges) -> list[str]:
    """The imports of a `_private` module or name of another subpackage."""
    bad = []
    for importer, target, names, line in edges:
        if _unit(importer) == _unit(target):
            continue
        private = [p for p in _short(target).split(".") if _private(p)]
        private += [n for n in names if _private(n)]
        if private:
            bad.append(f"{_short(importer)}:{line} imports {', '.join(private)} from "
                       f"{_short(target)}")
    return bad


def test_no_private_import_across_subpackages(edges):
    bad = private_imports(edges)
    assert not bad, ("a `_name` is only for its own subpackage; give the shared internal a "
                     "public owner:\n" + "\n".join(bad))


def test_every_unit_has_a_layer(edges):
    units = {_unit(_module_name(p)) for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(u for u in units - {"jaxplace"} if u not in LAYERS)
    assert not missing, f"add to LAYERS in {Path(__file__).name}: {missing}"
    assert len(set(LAYERS)) == len(LAYERS)


def test_no_cycle_between_modules_of_one_subpackage(edges):
    succ: dict[str, set[str]] = defaultdict(set)
    for importer, target, _, _ in edges:
        if importer != target and _unit(importer) == _unit(target):
            succ[_short(importer)].add(_short(target))
    cycles = _cycles(set(succ), succ)
    new = [c for c in cycles if not any(c <= allowed for allowed in ALLOWED_MODULE_CYCLES)]
    assert not new, "import cycles between modules of one subpackage: " + "; ".join(
        " <-> ".join(sorted(c)) for c in new)
    gone = [a for a in ALLOWED_MODULE_CYCLES if not any(a & c for c in cycles)]
    assert not gone, f"these cycles are gone: remove them from ALLOWED_MODULE_CYCLES: {gone}"


def test_no_module_cycle_even_counting_annotations():
    """No two modules of jaxplace import each other, directly or through others, counting
    imports inside functions and those for annotations only: a cycle hidden behind
    `TYPE_CHECKING` or a function body still ties the two modules' designs together."""
    succ: dict[str, set[str]] = defaultdict(set)
    for importer, target, _, _ in collect_edges(typing=True):
        if importer != target:
            succ[_short(importer)].add(_short(target))
    cycles = _cycles(set(succ), succ)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in cycles)


def split_face_imports(edges) -> list[str]:
    """Imports by the `__init__` of a package split over several layers of anything above
    the package's lowest layer."""
    rank = {e: i for i, e in enumerate(LAYERS)}
    lowest: dict[str, int] = {}
    for e in LAYERS:
        if "." in e:
            pkg = e.rsplit(".", 1)[0]
            lowest[pkg] = min(lowest.get(pkg, rank[e]), rank[e], rank.get(pkg, rank[e]))
    return [f"{_short(importer)}:{line} -> {_short(target)}"
            for importer, target, _, line in edges
            if _short(importer) in lowest and rank[_layer(target)] > lowest[_short(importer)]]


def test_split_packages_load_only_their_lowest_layer(edges):
    """Importing any module of a package runs its `__init__` first: a package split over
    several layers must keep its face at (or below) its lowest one, or the split is a
    fiction at run time."""
    bad = split_face_imports(edges)
    assert not bad, "a split package's __init__ imports above its lowest layer: " + ", ".join(bad)


def upward_imports(edges) -> dict[tuple[str, str], list[str]]:
    rank = {e: i for i, e in enumerate(LAYERS)}
    found = defaultdict(list)
    for importer, target, _, line in edges:
        a, b = _layer(importer), _layer(target)
        if a is not None and b is not None and rank[b] > rank[a]:
            found[a, b].append(f"{_short(importer)}:{line} -> {_short(target)}")
    return found


def test_no_new_upward_import(edges):
    new = {p: sites for p, sites in upward_imports(edges).items() if p not in ALLOWED_UPWARD}
    assert not new, ("a lower layer imports a later one (LAYERS, lowest first); move the "
                     "shared code down or the import up:\n" + "\n".join(
                         f"{a} -> {b}: {', '.join(s)}" for (a, b), s in sorted(new.items())))


def test_allowed_upward_imports_still_exist(edges):
    gone = sorted(ALLOWED_UPWARD - set(upward_imports(edges)))
    assert not gone, f"these layer violations are gone: remove them from ALLOWED_UPWARD: {gone}"


def test_the_checks_see_violations():
    """The parser and the layer map flag what they should, on hand-written sources."""
    src = ("import jaxplace.search\n"
           "def f():\n"
           "    from jaxplace.bounds._model import build\n"
           "    from jaxplace.exact import dp, _helper\n")
    mods = {"jaxplace.search", "jaxplace.bounds._model", "jaxplace.exact", "jaxplace.exact.dp"}
    found = sorted(_imports(ast.parse(src), mods))
    assert found == [("jaxplace.bounds._model", ("build",), 3),
                     ("jaxplace.exact", ("_helper",), 4), ("jaxplace.exact.dp", (), 4),
                     ("jaxplace.search", (), 1)]
    assert _layer("jaxplace.objectives.registry") == "objectives"
    assert _layer("jaxplace.objectives.throughput") == "objectives.throughput"
    edges = [("jaxplace.objectives.throughput.cost", "jaxplace.search.api", (), 1),
             ("jaxplace.search.api", "jaxplace.objectives.throughput.cost", (), 1)]
    assert set(upward_imports(edges)) == {("objectives.throughput.cost", "search")}
    assert private_imports([("jaxplace.exact.dp", "jaxplace.bounds._highs", (), 3),
                            ("jaxplace.cli.main", "jaxplace.formats", ("_json", "ok"), 4),
                            ("jaxplace.bounds.cover", "jaxplace.bounds._model", ("_x",), 5),
                            ("jaxplace.cli.main", "jaxplace.formats.__init__", (), 6)]) == [
        "exact.dp:3 imports _highs from bounds._highs",
        "cli.main:4 imports _json from formats"]
    assert split_face_imports([
        ("jaxplace.objectives.latency", "jaxplace.objectives.latency.instance", (), 1),
        ("jaxplace.objectives.latency", "jaxplace.objectives.latency.search", (), 2),
        ("jaxplace.search", "jaxplace.search.api", (), 3)]) == [
        "objectives.latency:2 -> objectives.latency.search"]
    assert _cycles({"a", "b", "c"}, {"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]


# The lazy-import boundary. An import inside a function defers loading only when what it
# loads is heavy; any other one just hides a dependency from the reader (and costs a dict
# lookup per call). So a jaxplace module is imported inside a function only where its
# module-level import closure (package faces included: importing a.b.c runs a/__init__ and
# a/b/__init__ first) reaches one of these packages, or where the importer is on the
# start-up path (`import jaxplace`, `jaxplace --help`, resolving a `Problem`'s objective:
# `startup_paths`) and the target is not: the face, `Problem`, the command and objective
# modules keep start-up at what it loads today.
#
# networkx is heavy too: `python -X importtime -c "import numpy, networkx"` puts it at
# 150-390 ms on top of numpy (2026-11-29, loaded 2-core machine), as much as all of
# `import jaxplace` (105-265 ms), for the node-link reader only.
HEAVY_PACKAGES = frozenset({
    "jax", "jaxlib", "flax", "optax", "evosax", "chex", "highspy", "onnx", "onnxruntime",
    "torch", "ray", "matplotlib", "scipy", "networkx"})

#: modules whose light function-level imports stay, module -> why; only ever remove.
ALLOWED_LIGHT_LAZY: dict[str, str] = {
    # `generate` is defined by the generators face, which imports latency_models: at
    # module level, importing latency_models first would find the face half-run
    "generators.latency_models": "takes a name from its own package's face (a cycle)",
}


def _statements(tree: ast.AST, in_function: bool = False):
    """(import statement, inside a function or method) for every import in `tree`,
    `if TYPE_CHECKING:` blocks left out (annotations only: never run)."""
    for node in ast.iter_child_nodes(tree):
        if _type_checking(node):
            for stmt in node.orelse:
                yield from _statements(ast.Module(body=[stmt], type_ignores=[]), in_function)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
        yield from _statements(node, in_function or isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))


def _lazy_faces(trees: dict[str, ast.AST]) -> dict[str, dict[str, str]]:
    """package -> {name: module} of the faces that load names on first access (a module
    `__getattr__` reading a `{name: "module"}` dict; a module without a dot is relative)."""
    out = {}
    for module, tree in trees.items():
        if not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            continue
        names = {}
        for n in tree.body:
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Dict):
                for k, v in zip(n.value.keys, n.value.values, strict=True):
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) \
                            and isinstance(v.value, str):
                        names[k.value] = v.value if "." in v.value else f"{module}.{v.value}"
        out[module] = names
    return out


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _loads(node, modules: set[str], faces) -> tuple[set[str], set[str], set[str]]:
    """What running one import statement loads: (the jaxplace modules it names, their
    parent packages (run first), the third-party top-level packages)."""
    named, third = set(), set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] == "jaxplace":
                named.add(alias.name)
            else:
                third.add(alias.name.split(".")[0])
    elif not node.level and node.module:
        if node.module.split(".")[0] != "jaxplace":
            third.add(node.module.split(".")[0])
        else:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in modules:  # `from package import module`: the package runs first
                    named.add(sub)
                else:  # a name the module defines, or a lazy face loads
                    named.add(node.module)
                    if alias.name in faces.get(node.module, {}):
                        named.add(faces[node.module][alias.name])
    named &= modules
    parents = {p for m in named for p in _parents(m)} & modules
    return named, parents - named, third


def import_graph(trees: dict[str, ast.AST]):
    """(module-level loads, heavy modules, function-level imports) of the modules in
    `trees` (name -> source tree). Module-level loads: module -> (jaxplace modules its
    module-level imports name, parent packages they run, third-party packages), with the
    module's own parents among the parents. A module is heavy when its module-level
    closure (parents included) loads a package of HEAVY_PACKAGES. Function-level imports:
    (importer, imported, line, modules the statement loads)."""
    modules, faces = set(trees), _lazy_faces(trees)
    level: dict[str, tuple[set[str], set[str], set[str]]] = {}
    inner = []
    for module, tree in trees.items():
        named, parents, third = set(), set(_parents(module)) & modules, set()
        for node, in_function in _statements(tree):
            n, p, t = _loads(node, modules, faces)
            if in_function:
                if n:
                    target = node.module if isinstance(node, ast.ImportFrom) else \
                        node.names[0].name
                    inner.append((module, target, node.lineno, n | p))
            else:
                named |= n
                parents |= p
                third |= t
        level[module] = (named - {module}, parents, third)
    heavy = {m for m in modules
             if any(level[x][2] & HEAVY_PACKAGES for x in _closure(level, {m}))}
    return level, heavy, inner


def _closure(level, roots) -> set[str]:
    """The jaxplace modules that importing `roots` runs (module-level imports, faces)."""
    seen, todo = set(), list(roots)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += [*level[m][0], *level[m][1]]
    return seen


def startup_paths(trees) -> dict[str, set[str]]:
    """What a user waits for before anything runs: `import jaxplace` (the face's
    module-level closure); `jaxplace --help` (that of the face, `cli.main` and the command
    modules it names: its parser imports each one for its help line); a `Problem`'s
    first question (`problem.objective_impl`): the objective registry loads the objective
    modules its "module:attr" entries name, in order, to find the one that serves it
    (the whole registry's, when this went in, on every `Problem` and on `jaxplace
    partition --help`)."""
    level = import_graph(trees)[0]
    main = trees.get("jaxplace.cli.main", ast.Module(body=[], type_ignores=[]))
    commands = {n.value for a in main.body if isinstance(a, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "COMMANDS" for t in a.targets)
                for n in ast.walk(a.value) if isinstance(n, ast.Constant) and n.value in trees}
    registry = trees.get("jaxplace.objectives.registry", ast.Module(body=[], type_ignores=[]))
    objectives = {n.value.split(":")[0] for n in ast.walk(registry)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and n.value.split(":")[0] in trees}
    face = {"jaxplace"} & set(trees)
    return {"import jaxplace": _closure(level, face),
            "jaxplace --help": _closure(level, face | {"jaxplace.cli.main", *commands}
                                        & set(trees)),
            "an objective resolved": _closure(level, face | objectives)}


def light_lazy_imports(trees) -> dict[tuple[str, str], list[str]]:
    """(importer, imported) -> lines of the function-level imports that delay nothing:
    they load no heavy module and, in a module that `import jaxplace` or `jaxplace --help`
    runs (`startup_paths`), nothing that path does not load already. They belong at module
    level."""
    level, heavy, inner = import_graph(trees)
    paths = startup_paths(trees).values()
    found = defaultdict(list)
    for importer, target, line, loads in inner:
        if loads & heavy:
            continue
        if any(importer in path and not _closure(level, loads) <= path for path in paths):
            continue  # at module level it would slow `import jaxplace` or `--help`
        found[_short(importer), _short(target)].append(f"{_short(importer)}:{line}")
    return found


def import_time_cycles(trees) -> list[set[str]]:
    """Cycles in what module-level imports run: each module to the modules its imports
    name and to their parent packages, but not to its own parents (a package face that
    imports its own module is the usual face, not a cycle; a name taken from one's own
    face, `from jaxplace.pkg import name`, still counts)."""
    level, _, _ = import_graph(trees)
    succ = {m: (named | (parents - set(_parents(m)))) - {m}
            for m, (named, parents, _) in level.items()}
    return _cycles(set(succ), succ)


def _source_trees() -> dict[str, ast.AST]:
    files = {_module_name(p): p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}
    return {m: ast.parse(p.read_text(encoding="utf-8"), filename=str(p))
            for m, p in files.items()}


@pytest.fixture(scope="module")
def trees():
    return _source_trees()


def test_jaxplace_imports_inside_functions_only_for_heavy_targets(trees):
    found = light_lazy_imports(trees)
    assert len(import_graph(trees)[1]) > 20, "no heavy module found: is the closure right?"
    new = {k: v for k, v in found.items() if k[0] not in ALLOWED_LIGHT_LAZY}
    assert not new, ("an import inside a function of a jaxplace module that loads nothing "
                     "heavy (HEAVY_PACKAGES): import it at module level:\n" + "\n".join(
                         f"{a} -> {b}: {', '.join(s)}" for (a, b), s in sorted(new.items())))
    gone = sorted(set(ALLOWED_LIGHT_LAZY) - {importer for importer, _ in found})
    assert not gone, f"these are gone: remove them from ALLOWED_LIGHT_LAZY: {gone}"


def test_no_cycle_at_import_time(trees):
    """Module-level imports, package faces included, form no cycle: whichever module is
    imported first, every module it needs is complete when it runs."""
    cycles = import_time_cycles(trees)
    assert not cycles, "import-time cycles: " + "; ".join(
        " <-> ".join(sorted(_short(m) for m in c)) for c in cycles)


def test_the_lazy_import_check_sees_violations():
    """Heavy through a parent face, a lazy face's name and a third-party import; light
    ones flagged; `TYPE_CHECKING` blocks ignored; a name from one's own face a cycle."""
    src = {
        "jaxplace": "import jaxplace.s\n",
        "jaxplace.s": ("import jaxplace.a\n"  # on the start-up path
                       "def f():\n"
                       "    import jaxplace.b.light\n"    # not loaded at start-up: lazy
                       "    from jaxplace.a.x import g\n"),  # loaded already: flagged
        "jaxplace.a": "import jaxplace.a.x\n",
        "jaxplace.a.x": "import numpy\n",
        "jaxplace.b": "def __getattr__(n): ...\n_LAZY = {'f': 'h'}\n",
        "jaxplace.b.h": "import jax\n",
        "jaxplace.b.light": "X = 1\n",
        "jaxplace.c": "import networkx\n",
        "jaxplace.c.y": "",
        "jaxplace.u": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from jaxplace.a.x import T\n"
            "def f():\n"
            "    from jaxplace.a.x import g\n"      # light: flagged
            "    from jaxplace.b import f\n"        # the lazy face's heavy module
            "    from jaxplace.c.y import z\n"      # heavy through its parent face
            "    import numpy\n"                    # third-party: not this check's
            "class K:\n"
            "    def m(self):\n"
            "        import jaxplace.b.light\n"),   # light, in a method: flagged
        "jaxplace.v": "from jaxplace.u import f\n",
    }
    trees = {m: ast.parse(s) for m, s in src.items()}
    assert import_graph(trees)[1] == {"jaxplace.b.h", "jaxplace.c", "jaxplace.c.y"}
    assert light_lazy_imports(trees) == {("u", "a.x"): ["u:5"], ("u", "b.light"): ["u:11"],
                                         ("s", "a.x"): ["s:4"]}
    trees["jaxplace.a"] = ast.parse("import jaxplace.a.x\nimport jaxplace.a.w\n")
    trees["jaxplace.a.w"] = ast.parse("from jaxplace.a import x\n")  # a face's own module
    assert import_time_cycles(trees) == []
    trees["jaxplace.a.w"] = ast.parse("from jaxplace.a import x, name\n")
    assert import_time_cycles(trees) == [{"jaxplace.a", "jaxplace.a.w"}]
