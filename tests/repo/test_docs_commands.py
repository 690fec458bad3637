"""Every command in the README and docs/*.md runs as written.

The fenced ```bash and ```python blocks of each page run in order, in one temporary
folder per page (with links to the repository's `jaxplace/`, `training/` and
`experiments/` so that paths into the repository resolve as in a clone): bash blocks
as `bash -e` scripts, python blocks as script files (so a `__main__` guard behaves as
in the user's script). A block whose fence is preceded by an HTML comment line

    <!-- docs-test: skip (why) -->    never run here (installs, downloads, GPUs, ...)
    <!-- docs-test: heavy (why) -->   run only with `-m heavy` (minutes)

says so, with its reason. One test per page (the blocks of a page depend on each
other, so they never split over xdist workers).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from repo_paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = ("jaxplace", "training", "experiments", "policies", "notebooks")
MARK = re.compile(r"^<!--\s*docs-test:\s*(skip|heavy)\s*\((.+)\)\s*-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")
BLOCK_TIMEOUT = 900


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str  # "bash" or "python"
    text: str
    mark: str | None  # None (default set), "skip" or "heavy"
    reason: str

    def __str__(self) -> str:
        name = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{name}:{self.line} ({self.lang})"


def blocks(page: Path) -> list[Block]:
    """The bash and python blocks of `page`, in order, with their markers."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if lang in ("bash", "python"):
            prev = lines[start - 1] if start else ""
            mk = MARK.match(prev.strip())
            out.append(Block(page, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n",
                             mk.group(1) if mk else None, mk.group(2) if mk else ""))
        i = j + 1
    return out


def run_block(block: Block, folder: Path) -> None:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("JAXPLACE_DATA", None)  # as in a fresh clone
    if not env.get("JAXPLACE_CACHE_DIR"):  # the suite may turn the cache off; a user's is on
        env["JAXPLACE_CACHE_DIR"] = str(folder / "xla-cache")
    if block.lang == "bash":
        cmd = ["bash", "-e", "-o", "pipefail", "-c", block.text]
    else:
        script = folder / f"snippet_{block.page.stem}_{block.line}.py"
        script.write_text(block.text)
        cmd = [sys.executable, script.name]
    p = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True,
                       timeout=BLOCK_TIMEOUT, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, (f"{block} failed with exit status {p.returncode}:\n"
                               f"{block.text}\n--- stdout\n{p.stdout[-3000:]}\n"
                               f"--- stderr\n{p.stderr[-3000:]}")


def run_page(page: Path, folder: Path, heavy: bool) -> int:
    for name in LINKED:
        if (ROOT / name).exists():
            (folder / name).symlink_to(ROOT / name)
    ran = 0
    for b in blocks(page):
        if b.mark == "skip" or (b.mark == "heavy" and not heavy):
            continue
        run_block(b, folder)
        ran += 1
    return ran


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_every_block_is_run_or_says_why_not():
    """Markers carry a reason; the README's test command is CI's (`.ci/run`)."""
    every = [b for p in PAGES for b in blocks(p)]
    assert every, "no blocks found"
    for b in every:
        assert b.mark is None or len(b.reason) > 3, f"{b}: marker without a reason"
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    readme = [b for b in blocks(ROOT / "README.md") if "pytest" in b.text]
    assert len(readme) == 1, "one test command in the README"
    assert readme[0].text.strip().splitlines()[-1] == ci


def test_block_parser_reads_markers(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("x\n```bash\necho a\n```\n<!-- docs-test: heavy (slow) -->\n"
                    "```python\nprint(1)\n```\n```\nplain\n```\n<!-- docs-test: skip "
                    "(needs a GPU) -->\n```bash\nfalse\n```\n")
    got = [(b.lang, b.mark, b.reason, b.text) for b in blocks(page)]
    assert got == [("bash", None, "", "echo a\n"), ("python", "heavy", "slow", "print(1)\n"),
                   ("bash", "skip", "needs a GPU", "false\n")]
    with pytest.raises(AssertionError, match="exit status 1"):
        run_block(blocks(page)[2], tmp_path)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_page_commands_run(page, tmp_path):
    run_page(page, tmp_path, heavy=False)


@pytest.mark.heavy
@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_page_commands_run_heavy(page, tmp_path):
    run_page(page, tmp_path, heavy=True)
