"""Config files shipped with jaxplace (`jaxplace/llm/configs/*.json`), written from the
published model dimensions in Hugging Face's config.json layout."""

from __future__ import annotations

from pathlib import Path

from jaxplace.errors import JaxplaceError

FOLDER = Path(__file__).with_name("configs")


def shipped_configs() -> list[str]:
    """Names of the shipped configs (file stems), sorted."""
    return sorted(p.stem for p in FOLDER.glob("*.json"))


def shipped_config(name: str) -> Path:
    """The path of a shipped config by name, e.g. "llama-2-7b"."""
    path = FOLDER / f"{name}.json"
    if not path.is_file():
        raise JaxplaceError(f"unknown config {name!r}; shipped: "
                            f"{', '.join(shipped_configs())}", field="config")
    return path
