"""What the bench commands share: markdown tables. (One search by a bench method name
is `jaxplace.search.search_named`.)"""

from __future__ import annotations


def markdown_table(head, rows) -> str:
    """A markdown table with columns padded to their widest cell."""
    widths = [max(len(str(r[c])) for r in [head, *rows]) for c in range(len(head))]

    def fmt(r):
        return "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)) + " |"

    return "\n".join([fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
                      *map(fmt, rows)])
