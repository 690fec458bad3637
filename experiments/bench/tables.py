"""Markdown tables for the benchmarks of experiments/bench (columns padded to their
widest cell, as `jaxplace bench` prints them)."""

from __future__ import annotations


def markdown_table(head, rows) -> str:
    """A markdown table with columns padded to their widest cell."""
    widths = [max(len(str(r[c])) for r in [head, *rows]) for c in range(len(head))]

    def fmt(r):
        return "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)) + " |"

    return "\n".join([fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
                      *map(fmt, rows)])
