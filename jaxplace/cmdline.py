"""What every jaxplace command line shares, below both the CLI and the benchmarks:
argparse types (`positive_int`, `seconds`) and the check of an output path made before
any work (`check_output`). Light to import: no JAX, HiGHS or networkx."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from jaxplace.errors import JaxplaceError


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def seconds(text: str) -> float:
    """A time limit: a positive, finite number of seconds."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return v


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def _can_create_in(folder: Path) -> bool:
    """Whether a file can be created in `folder`: tried, as the atomic write will
    (permission bits alone say yes to root on read-only or virtual file systems)."""
    import tempfile

    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        fd, tmp = tempfile.mkstemp(prefix=".jaxplace-probe.", dir=folder)
    except OSError:
        return False
    os.close(fd)
    os.unlink(tmp)
    return True


def check_output(path: str | None, *, inputs=(), replace: bool = True,
                 make_parents: bool = False, field: str = "--output") -> None:
    """Refuse an output path before any work: its folder must exist (or, with
    `make_parents`, the nearest existing ancestor) and be writable; it must not be a
    directory nor one of `inputs`; an existing file is refused unless `replace`.
    Errors are JaxplaceErrors naming the path (one line, exit 2)."""
    if path is None or path == "-":
        return
    p = Path(path)

    def fail(message: str):
        raise JaxplaceError(message, source=str(path), field=field)

    if p.is_dir():
        fail("is a directory, expected a file name")
    folder = p.parent
    if make_parents:
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
    if not folder.exists():
        fail(f"folder {str(folder)!r} does not exist")
    if not folder.is_dir():
        fail(f"{str(folder)!r} is not a folder")
    if not _can_create_in(folder):
        fail(f"folder {str(folder)!r} is not writable")
    for inp in inputs:
        if inp and _same_file(p, Path(inp)):
            fail("is the input file; choose another output name")
    if p.exists() and not replace:
        fail("exists; pass --force to replace it, or -o to choose a name")


__all__ = ["check_output", "positive_int", "seconds"]
