"""A module is public if and only if its package's face names it (issue 64, item 4).

Every module `jaxplace/<pkg>/.../<name>.py` with no `_`-prefixed part, and every such
subpackage, is named by its parent package's `__init__.py`: the face imports from it
(`from jaxplace.x.name import ...`, `from .name import ...`, `from . import name`), loads
it by string (`"jaxplace.x.name"` anywhere in the face's code, or `"name"` as a value of
a lazy map such as `_LAZY`), or its docstring lists it: in backticks (`` `name` ``,
`` `name/` ``, `` `jaxplace.x.name` ``) or by its file name (`name.py`). A module its
face does not name is `_`-prefixed, so the name alone tells a reader the library's
surface from its internals. Top-level modules are named by `jaxplace/__init__.py` the
same way; `__main__.py` is exempt. Checked on the source with `ast`: nothing imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from repo_paths import ROOT

PACKAGE = ROOT / "jaxplace"
#: Entry points run as scripts, named by no face.
EXEMPT = frozenset({"__main__.py"})
#: A span in backticks, and one that names a child module by its bare name: `name`,
#: `name.py`, or `name/` for a subpackage (a dotted `jaxplace.x.name` counts as well).
_BACKTICKED = re.compile(r"`([^`\s]+)`")
_BARE = re.compile(r"([A-Za-z_]\w*)(?:\.py|/)?")
#: A file name, backticked or not (`evaluator.py`, as the decoder's face lists them).
_FILE = re.compile(r"(?<![\w./])([A-Za-z_]\w*)\.py\b")


def _strings(node: ast.AST, skip_keys: bool) -> list[str]:
    """String constants in `node`; a dict's keys left out when `skip_keys`."""
    keys = {id(k) for d in ast.walk(node) if isinstance(d, ast.Dict)
            for k in d.keys if k is not None} if skip_keys else set()
    return [s.value for s in ast.walk(node) if isinstance(s, ast.Constant)
            and isinstance(s.value, str) and id(s) not in keys]


def face_names(source: str, package: str) -> set[str]:
    """The names of the child modules of `package` (dotted, `jaxplace.search`) that the
    face `source` (its `__init__.py`) imports from, loads by string or lists in its
    docstring. A name that is no module of the package is harmless: callers compare."""
    tree = ast.parse(source)
    names: set[str] = set()

    def child(dotted: str) -> None:
        if dotted.startswith(package + "."):
            names.add(re.split(r"[.:]", dotted[len(package) + 1:])[0])

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                child(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module == package:
                names.update(alias.name for alias in node.names)
            elif node.level == 0 and node.module:
                child(node.module)
            elif node.level == 1 and node.module:
                names.add(node.module.split(".")[0])
            elif node.level == 1:
                names.update(alias.name for alias in node.names)
    docstring = ast.get_docstring(tree) or ""
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring: read below, for the names it lists
        for text in _strings(node, skip_keys=False):
            child(text)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                continue  # attribute names, not modules
            names.update(_strings(node.value, skip_keys=True) if node.value else ())
    for span in _BACKTICKED.findall(docstring):
        bare = _BARE.fullmatch(span)
        if bare:
            names.add(bare.group(1))
        else:
            child(span)
    names.update(_FILE.findall(docstring))
    return names


def public_modules(package_dir: Path) -> list[tuple[Path, Path, str, str]]:
    """(module path, face path, parent package dotted, name) for every public module
    and subpackage below `package_dir`, the package itself left out."""
    out = []
    top = package_dir.parent
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(top)
        if "__pycache__" in rel.parts or path.name in EXEMPT:
            continue
        if path.name == "__init__.py":
            rel = rel.parent
            if rel == Path(package_dir.name):
                continue
            parts = rel.parts
        else:
            parts = rel.with_suffix("").parts
        if any(part.startswith("_") for part in parts):
            continue
        parent = top.joinpath(*parts[:-1])
        out.append((path, parent / "__init__.py", ".".join(parts[:-1]), parts[-1]))
    return out


def unnamed(package_dir: Path) -> list[str]:
    """One line per public module below `package_dir` that its face does not name."""
    faces: dict[Path, set[str]] = {}
    lines = []
    for path, face, package, name in public_modules(package_dir):
        if face not in faces:
            faces[face] = face_names(face.read_text(), package) if face.exists() else set()
        if name not in faces[face]:
            top = package_dir.parent
            lines.append(f"{path.relative_to(top)}: not named by {face.relative_to(top)} "
                         "(import it there or list it in its docstring)")
    return lines


def test_every_public_module_is_named_by_its_face():
    assert len(public_modules(PACKAGE)) > 100  # the walk found the package
    missing = unnamed(PACKAGE)
    assert not missing, f"{len(missing)} public modules no face names:\n" + "\n".join(missing)


FACE = '''"""The toy package.

Modules: `listed` (what it holds), `listed_py.py` (likewise), `folder/` (a subpackage),
`jaxplace.toy.dotted_doc` (by its dotted name), a file (file_name.py); `jp.toy.not_this`,
`other.attr` and tests/not_a_child.py name something else.
"""
import importlib
from jaxplace.toy.imported import thing
from .relative import other
from . import sibling
_LAZY = {"Name": "lazy_value", "lazy_key": "jaxplace.toy.dotted"}
__all__ = ["exported"]

def __getattr__(name):
    return importlib.import_module("jaxplace.toy.by_string:attr")
'''


def test_face_names_reads_imports_lazy_strings_and_the_docstring():
    names = face_names(FACE, "jaxplace.toy")
    for name in ("listed", "listed_py", "folder", "dotted_doc", "file_name", "imported",
                 "relative", "sibling", "lazy_value", "dotted", "by_string"):
        assert name in names, name
    # a dict key and an `__all__` entry name attributes; `thing` is not a module path
    for name in ("lazy_key", "Name", "exported", "thing", "toy", "not_this", "other", "not_a_child",
                 "missing"):
        assert name not in names, name


def test_unnamed_lists_a_module_its_face_leaves_out(tmp_path):
    pkg = tmp_path / "jaxplace"
    (pkg / "toy" / "_private").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Top. Modules: `named`."""\nimport jaxplace.toy\n')
    (pkg / "named.py").write_text("")
    (pkg / "__main__.py").write_text("")
    (pkg / "toy" / "__init__.py").write_text(FACE)
    for name in ("listed", "imported", "left_out", "_hidden"):
        (pkg / "toy" / f"{name}.py").write_text("")
    (pkg / "toy" / "_private" / "inner.py").write_text("")
    assert unnamed(pkg) == ["jaxplace/toy/left_out.py: not named by "
                            "jaxplace/toy/__init__.py (import it there or list it in "
                            "its docstring)"]
    (pkg / "toy" / "__init__.py").write_text(FACE.replace("`listed`", "`left_out`"))
    assert unnamed(pkg) == ["jaxplace/toy/listed.py: not named by jaxplace/toy/__init__.py "
                            "(import it there or list it in its docstring)"]
