"""User-facing errors: one line naming the file, the field and the problem."""

from __future__ import annotations


class JaxplaceError(ValueError):
    """Bad input or an impossible request; the CLI prints it on one line and exits with 2.

    Args:
        message: what is wrong, e.g. "cycle through node 'relu_3'".
        source: the file (or object) the input came from, if known.
        field: the field inside the source, e.g. "nodes[3].work".
    """

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.message = message
        self.source = source
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [p for p in (self.source, self.field) if p]
        return ": ".join([*parts, self.message])

    def with_source(self, source: str) -> JaxplaceError:
        """The same error, attributed to `source` unless it already names one."""
        if self.source:
            return self
        return JaxplaceError(self.message, source=source, field=self.field)
