"""Where the repository's files are, for tests in any folder of tests/ (a test's own
`__file__` says nothing about the root once tests live in subfolders)."""

from pathlib import Path

#: This folder: the shared helpers (brute.py, oracles.py, ...) and data/.
TESTS = Path(__file__).resolve().parent
#: The repository root (jaxplace/, docs/, experiments/, notebooks/, README.md).
ROOT = TESTS.parent
#: Files the tests read (graphs, expected views, recorded recipes).
DATA = TESTS / "data"
