"""The package holds the library only: no lab notes, probes or repository paths."""

from __future__ import annotations

import re

from repo_paths import ROOT

PACKAGE = ROOT / "jaxplace"
#: What an installed user does not have: the lab folders and the shared workspace.
FORBIDDEN = re.compile(r"\bnotes/|\bexperiments/|\.\./shared")
#: Where the package tells a user where a research benchmark went (`jaxplace bench
#: NAME` for a moved NAME answers with its path in a repository checkout).
TELLS_WHERE_BENCHMARKS_WENT = frozenset({"jaxplace/bench/__init__.py", "jaxplace/cli/cmd_bench.py"})


def _files():
    return [p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts]


def test_no_file_in_the_package_cites_the_lab_or_the_shared_workspace():
    files = _files()
    assert len(files) > 50  # the walk found the package
    hits = []
    for path in files:
        if path.suffix in (".msgpack", ".so", ".pyc") or \
                str(path.relative_to(PACKAGE.parent)) in TELLS_WHERE_BENCHMARKS_WENT:
            continue
        text = path.read_text(errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                hits.append(f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}")
    assert not hits, "\n".join(hits)


def test_the_pattern_catches_what_it_is_for():
    assert FORBIDDEN.search("measured in notes/polish.md")
    assert FORBIDDEN.search("(experiments/gpu.md)")
    assert FORBIDDEN.search("see ../shared/docs/mtpp.md")
    assert not FORBIDDEN.search("footnotes are fine, and so is shared/data")


def test_no_probe_script_or_symlink_in_the_package():
    # probes are scripts run as __main__ over a set of problems; the package's own
    # entry points are the CLI's subcommands and `python -m jaxplace.<bench>` modules
    assert not [p for p in PACKAGE.rglob("*") if p.is_symlink()]
    lab = {p.name for p in (PACKAGE.parent / "experiments").glob("*.py")}
    probes = [p for p in PACKAGE.rglob("*.py")
              if p.name in lab or re.match(r"(probe|policy_|wincmp|warmcold)", p.name)]
    assert not probes, probes
