"""Things chosen by name: the one registry mechanism of jaxplace.

The objectives, the search methods, the bound methods (the certificate's ladder) and
the CLI's commands are each a `Registry`: names in a fixed order (the order matters:
the first objective that matches a problem serves it, the ladder runs cheap bounds
first, `--help` lists the commands as registered), each name bound to an entry.

An entry is the object itself or a `Lazy` one, written as a string: "module:attr"
(the attribute) or "module" (the module). A lazy entry is imported on its first use
and kept, so a registry can name things that need JAX or HiGHS, or that live in a
later import layer, while `import jaxplace`, `Problem` and `jaxplace --help` load
none of them. Listing, counting and `name in registry` never load an entry.

This module sits low in the import layers: it imports nothing of jaxplace but the
error type.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from jaxplace.errors import JaxplaceError


def load_path(path: str) -> Any:
    """The object at "module:attr" (the module itself for "module"), importing it."""
    module, _, attr = path.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attr) if attr else loaded


@dataclass(frozen=True)
class Lazy:
    """An entry imported on first use: `path` is "module:attr" or "module"."""

    path: str

    def load(self) -> Any:
        return load_path(self.path)


def _entry(value: Any) -> Any:
    return Lazy(value) if isinstance(value, str) else value


_MISSING = object()


class Registry(MutableMapping):
    """name -> entry, in registration order; lazy entries load on first access.

    Args:
        what: what the entries are, for errors ("search method", "command").
        entries: the initial (name, entry) pairs, or a mapping of them.
        field: the `JaxplaceError.field` of an unknown name (default `what`).
        casefold: `get` also finds a name spelt in another case.

    `registry[name]` and iteration behave as a dict's (KeyError for an unknown name);
    `get(name)` is the user-facing lookup: an unknown name is a JaxplaceError naming
    the known ones and the close matches. `registry[name] = entry` adds or replaces
    (keeping the old place); `register` refuses a second entry unless told to replace.
    """

    def __init__(self, what: str, entries: Iterable[tuple[str, Any]] | Mapping = (), *,
                 field: str | None = None, casefold: bool = False):
        self.what = what
        self.field = field or what
        self.casefold = casefold
        self._entries: dict[str, Any] = {}
        self._lock = threading.Lock()  # held only to swap a lazy entry for its object
        pairs = entries.items() if isinstance(entries, Mapping) else entries
        for name, entry in pairs:
            self.register(name, entry)

    # -- adding and removing ----------------------------------------------------------
    def register(self, name: str, entry: Any, *, first: bool = False,
                 replace: bool = False) -> Any:
        """Add `entry` under `name` (a string entry is a `Lazy` path) and return it.

        A second entry under a name is a JaxplaceError unless `replace`; a replacing
        entry takes the old one's place. `first` puts the entry before all the others.
        """
        if not isinstance(name, str) or not name:
            raise JaxplaceError(f"{self.what} names are non-empty strings, got {name!r}",
                                field="name")
        if name in self._entries and not replace:
            raise JaxplaceError(f"{self.what} {name!r} is registered already; pass "
                                "replace=True to replace it", field="name")
        entry = _entry(entry)
        if first:
            rest = [(k, v) for k, v in self._entries.items() if k != name]
            self._entries.clear()
            self._entries[name] = entry
            self._entries.update(rest)
        else:
            self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove `name` (nothing happens when it is not registered)."""
        self._entries.pop(name, None)

    def __setitem__(self, name: str, entry: Any) -> None:
        self.register(name, entry, replace=True)

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    # -- reading ------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        entry = self._entries[name]
        if not isinstance(entry, Lazy):
            return entry
        loaded = entry.load()  # outside the lock: an import may reach this registry
        with self._lock:
            current = self._entries.get(name)
            if current is entry:  # not replaced or loaded meanwhile
                self._entries[name] = loaded
                return loaded
        return self[name] if name in self._entries else loaded

    def __contains__(self, name: object) -> bool:  # loads nothing (Mapping's would)
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))  # a snapshot: loading may run registrations

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self._entries)})"

    def names(self) -> tuple[str, ...]:
        """The registered names, in order (loads nothing)."""
        return tuple(self._entries)

    def entry(self, name: str) -> Any:
        """The entry as registered: the object, or its `Lazy` path if not loaded yet."""
        return self._entries[name]

    def is_loaded(self, name: str) -> bool:
        return not isinstance(self._entries[name], Lazy)

    def resolve(self, name: str) -> str | None:
        """The registered spelling of `name` (case-insensitive if `casefold`; None:
        unknown)."""
        if name in self._entries:
            return name
        if self.casefold and isinstance(name, str):
            low = name.strip().lower()
            return next((n for n in self._entries if n.lower() == low), None)
        return None

    def get(self, name: str, default: Any = _MISSING) -> Any:
        """The entry called `name`, loaded. An unknown name returns `default` when one
        is given (as a dict's `get`), else raises a JaxplaceError listing the names
        and the close matches."""
        key = self.resolve(name)
        if key is None:
            if default is not _MISSING:
                return default
            raise self.unknown(name)
        return self[key]

    def unknown(self, name: Any) -> JaxplaceError:
        """The error for an unknown `name`: the known names, then the close ones."""
        names = list(self._entries)
        text = str(name)
        if self.casefold:
            spelled = {n.lower(): n for n in names}
            close = [spelled[c] for c in difflib.get_close_matches(
                text.strip().lower(), list(spelled), n=3, cutoff=0.6)]
        else:
            close = difflib.get_close_matches(text, names, n=3, cutoff=0.6)
        hint = (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "")
        return JaxplaceError(f"unknown {self.what} {name!r}; choose one of "
                             f"{', '.join(names)}{hint}", field=self.field)

    def view(self) -> RegistryView:
        """A read-only view: it follows later registrations but cannot make them."""
        return RegistryView(self)


class RegistryView(Mapping):
    """A read-only face of a `Registry`: reads (loading as the registry does), no
    registering. Subclass it to give a registry that is fixed at import time its own
    read methods (the bound ladder's `kind`)."""

    def __init__(self, registry: Registry):
        self._registry = registry

    def __getitem__(self, name: str) -> Any:
        return self._registry[name]

    def __contains__(self, name: object) -> bool:
        return name in self._registry

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry)

    def __len__(self) -> int:
        return len(self._registry)

    def __repr__(self) -> str:
        return f"RegistryView({self._registry.what!r}: {', '.join(self._registry)})"

    @property
    def what(self) -> str:
        return self._registry.what

    def names(self) -> tuple[str, ...]:
        return self._registry.names()

    def entry(self, name: str) -> Any:
        return self._registry.entry(name)

    def is_loaded(self, name: str) -> bool:
        return self._registry.is_loaded(name)

    def resolve(self, name: str) -> str | None:
        return self._registry.resolve(name)

    def get(self, name: str, default: Any = _MISSING) -> Any:
        return self._registry.get(name, default)

    def unknown(self, name: Any) -> JaxplaceError:
        return self._registry.unknown(name)


__all__ = ["Lazy", "Registry", "RegistryView", "load_path"]
