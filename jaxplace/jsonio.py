"""JSON reading and atomic writing with one-line errors."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError


def read_json(path: str | os.PathLike) -> Any:
    p = Path(path)
    if not p.exists():
        raise JaxplaceError("no such file", source=str(path))
    if p.is_dir():
        raise JaxplaceError("is a directory, expected a JSON file", source=str(path))
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JaxplaceError(f"cannot read: {exc}", source=str(path)) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JaxplaceError(f"not valid JSON: {exc.msg} at line {exc.lineno} column "
                            f"{exc.colno}", source=str(path)) from exc


def _default(o):
    if isinstance(o, np.integer | np.bool_):
        return o.item()
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"cannot write {type(o).__name__} as JSON")


def _finite(o):
    """JSON has no infinity: write +inf as the string "inf" (read back by float())."""
    if isinstance(o, float | np.floating) and not np.isfinite(o):
        return str(float(o))
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite(v) for v in o]
    return o


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it back at once
    os.umask(mask)
    return mask


def write_json(path: str | os.PathLike, data: Any, *, indent: int | None = 1) -> None:
    """Write JSON atomically: a temp file in the same folder, then rename.

    A crash or Ctrl-C leaves either the old file or the new one, never half of one.
    """
    p = Path(path)
    if str(path) == "-":
        import sys

        json.dump(_finite(data), sys.stdout, indent=indent, default=_default)
        sys.stdout.write("\n")
        return
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise JaxplaceError("folder does not exist", source=str(folder))
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; use what open() would
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(_finite(data), f, indent=indent, default=_default)
            f.write("\n")
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
