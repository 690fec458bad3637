"""Execute every notebook in notebooks/ so they stay runnable.

The notebooks read JAXPLACE_NOTEBOOK_SIZE in their first code cell: "ci" (set here,
inherited by the kernel) shrinks graphs, budgets, training steps and time limits so
that each runs in seconds; unset (a user's run) gives the full sizes. Run the full
sizes here with JAXPLACE_NOTEBOOK_SIZE=full.
"""

import glob
import os

import pytest
from repo_paths import ROOT

NOTEBOOKS = sorted(glob.glob(str(ROOT / "notebooks" / "*.ipynb")))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    monkeypatch.setenv("MPLBACKEND", os.environ.get("MPLBACKEND", "Agg"))
    monkeypatch.setenv("JAXPLACE_NOTEBOOK_SIZE", os.environ.get("JAXPLACE_NOTEBOOK_SIZE", "ci"))
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
