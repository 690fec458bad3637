"""experiments/ (the lab beside the library) stays readable: one note per topic, every
file linked from its README, no file named by a work period, and scripts that use only
the library's public faces (`jaxplace`, `jaxplace.<subpackage>`, public top-level
modules), so they keep running as the internals change."""

from __future__ import annotations

import ast
import re

from repo_paths import ROOT

LAB = ROOT / "experiments"
PKG = ROOT / "jaxplace"

#: a file or folder named by the work period that made it (`compile_s25.py`, `gpu_s24/`)
PERIOD = re.compile(r"_s\d\d(?:[_./]|$)|session", re.IGNORECASE)
LINK = re.compile(r"\]\(([^)#\s]+)")


def _lab_files() -> list[str]:
    return sorted(str(p.relative_to(LAB)) for p in LAB.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts
                  and not any(part.startswith(".") for part in p.relative_to(LAB).parts))


def _faces() -> set[str]:
    """The modules a lab script may import: package faces and public top-level modules."""
    faces = {".".join(p.parent.relative_to(ROOT).parts) for p in PKG.rglob("__init__.py")
             if "__pycache__" not in p.parts}
    faces |= {f"jaxplace.{p.stem}" for p in PKG.glob("*.py") if not p.stem.startswith("_")}
    return faces


def _modules() -> set[str]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}


def non_face_imports(source: str, faces: set[str], modules: set[str]) -> list[str]:
    """The jaxplace imports of `source` that reach past a public face."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [(a.name, []) for a in node.names if a.name.split(".")[0] == "jaxplace"]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and \
                node.module.split(".")[0] == "jaxplace":
            targets = [(node.module, [a.name for a in node.names])]
        else:
            continue
        for module, names in targets:
            if module not in faces:
                bad.append(f"{node.lineno}: {module}")
            for name in names:
                if name.startswith("_") or f"{module}.{name}" in modules - faces:
                    bad.append(f"{node.lineno}: {module}.{name}")
    return bad


def unlinked(files: list[str], readme: str) -> list[str]:
    """Files no link of the README reaches (a link to a folder, or to a folder's README,
    covers the folder)."""
    roots = set()
    for link in LINK.findall(readme):
        link = link.rstrip("/")
        roots.add(link)
        if link.endswith("/README.md"):
            roots.add(link.rsplit("/", 1)[0])
    return [f for f in files if f != "README.md" and not any(
        f == r or f.startswith(r + "/") for r in roots)]


def test_no_file_named_by_a_work_period():
    files = _lab_files()
    assert len(files) > 10, "the walk found too few files to be reading experiments/"
    named = [f for f in files if PERIOD.search(f)]
    assert not named, f"name lab files by topic, not by work period: {named}"


def test_every_lab_file_is_linked_from_the_readme():
    missing = unlinked(_lab_files(), (LAB / "README.md").read_text(encoding="utf-8"))
    assert not missing, f"link these from experiments/README.md: {missing}"


def _non_face_scripts() -> dict[str, list[str]]:
    faces, modules = _faces(), _modules()
    found = {}
    for path in sorted(LAB.rglob("*.py")):
        hits = non_face_imports(path.read_text(encoding="utf-8"), faces, modules)
        if hits:
            found[str(path.relative_to(LAB))] = hits
    return found


def test_lab_scripts_import_only_public_faces():
    new = _non_face_scripts()
    assert not new, "lab scripts import internals (use a public face):\n" + "\n".join(
        f"experiments/{f}:{hit}" for f, hits in new.items() for hit in hits)


def test_the_checks_see_violations():
    faces = {"jaxplace", "jaxplace.search", "jaxplace.objectives.throughput.cost"}
    modules = faces | {"jaxplace.search.brkga", "jaxplace.search._util"}
    src = ("import jaxplace as jp\n"
           "from jaxplace.search import search_many, brkga, _hidden\n"
           "from jaxplace.search.brkga import BRKGA\n"
           "import jaxplace.search._util\n"
           "from jaxplace.objectives.throughput.cost import evaluate_partition\n")
    assert non_face_imports(src, faces, modules) == [
        "2: jaxplace.search.brkga", "2: jaxplace.search._hidden",
        "3: jaxplace.search.brkga", "4: jaxplace.search._util"]
    readme = "[a](a.md) [recipes](recipes/README.md) [logs/](logs/)"
    assert unlinked(["a.md", "b.md", "recipes/x.json", "logs/run/m.jsonl", "README.md"],
                    readme) == ["b.md"]
    assert PERIOD.search("compile_s25.py") and PERIOD.search("gpu_s24/run1.log")
    assert not PERIOD.search("policy_history_gnn-v1.md") and not PERIOD.search("scale.md")


#: modules of experiments/bench/ that are helpers, not benchmarks
BENCH_HELPERS = frozenset({"command", "tables"})


def test_every_lab_benchmark_is_listed_with_its_command():
    """Every benchmark is in one obvious place: the research ones in experiments/bench/,
    each listed in the README with its command, and `jaxplace bench` answers each moved
    name with a file that exists; none of them is left in the package."""
    from jaxplace.bench import BENCHES, MOVED

    readme = (LAB / "README.md").read_text(encoding="utf-8")
    benches = sorted(p.stem for p in (LAB / "bench").glob("*.py")
                     if p.stem not in BENCH_HELPERS)
    assert len(benches) >= 8, benches
    missing = [b for b in benches if f"`python -m experiments.bench.{b}" not in readme]
    assert not missing, f"list these with their command in experiments/README.md: {missing}"
    assert not set(MOVED) & set(BENCHES)
    for name, path in MOVED.items():
        assert (ROOT / path).is_file(), path
        assert not (PKG / "bench" / f"{name}.py").exists(), name
    for name in BENCHES:
        assert (PKG / "bench" / f"{name}.py").is_file(), name
