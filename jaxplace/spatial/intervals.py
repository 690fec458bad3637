"""Interval arithmetic on feature maps (BBGraP, Section 3.2, Eqs. 1-6).

Intervals are half-open `(start, end)` pairs of ints; an empty interval has
`start == end`. A layer's output along one axis is divided among devices
(`even_shares`, Eq. 1, or `weighted_shares` for unequal devices), and the rows of
the input that a device's output rows read follow from the kernel, stride,
dilation and padding (`window_input`, Eqs. 2-6).

BBGraP's Eqs. 3-5 as printed differ from the exact interval in two places, kept
here for reference in `paper_bounds`:

- Eq. 3 writes the input extent with the whole output size `O`; per device it is
  the device's share `pO(d,i)` (as Fig. 4's example does).
- Eq. 5 subtracts the trailing padding `P(d,1)` for the last device. That is the
  exact end only when the padded input has no rows that no window reads, i.e.
  `(O - 1) * S + tK == I + P0 + P1`; otherwise (stride 2 with a spare row, say)
  it ends `slack` rows early and the last device would miss input rows. We clamp
  to the unpadded input instead.
"""

from __future__ import annotations

from collections.abc import Sequence

Interval = tuple[int, int]


def even_shares(n: int, parts: int) -> list[int]:
    """Eq. 1: floor(n / parts) each, the remainder given round-robin from device 0.

    >>> even_shares(8, 3)
    [3, 3, 2]
    """
    if parts < 1:
        raise ValueError(f"parts must be at least 1, got {parts}")
    q, r = divmod(int(n), parts)
    return [q + (1 if i < r else 0) for i in range(parts)]


def weighted_shares(n: int, weights: Sequence[float]) -> list[int]:
    """Shares of n proportional to `weights` (device speeds), by largest remainder;
    ties go to the lower index, so equal weights give exactly `even_shares`.
    A zero weight gets nothing."""
    w = [max(float(x), 0.0) for x in weights]
    total = sum(w)
    if not w:
        raise ValueError("no weights")
    if total <= 0:
        return even_shares(n, len(w))
    exact = [n * x / total for x in w]
    base = [int(e) for e in exact]
    # Tolerate float error: an exact share of 2.9999999 is 3.
    base = [b + 1 if e - b > 1 - 1e-9 else b for b, e in zip(base, exact, strict=True)]
    rest = n - sum(base)
    order = sorted(range(len(w)), key=lambda i: (-(exact[i] - base[i]), i))
    for i in order[:max(rest, 0)]:
        base[i] += 1
    return base


def shares_to_intervals(sizes: Sequence[int]) -> list[Interval]:
    """Consecutive intervals of the given sizes, starting at 0."""
    out, start = [], 0
    for s in sizes:
        out.append((start, start + int(s)))
        start += int(s)
    return out


def true_kernel(k: int, dilation: int) -> int:
    """Eq. 2: the extent of a dilated kernel, (K - 1) * D + 1."""
    return (int(k) - 1) * int(dilation) + 1


def input_extent(n_out: int, stride: int, tk: int) -> int:
    """Eq. 3 (per device): padded input rows read by n_out output rows."""
    return (int(n_out) - 1) * int(stride) + int(tk) if n_out > 0 else 0


def output_size(n_in: int, k: int, stride: int, dilation: int, pad_lo: int,
                pad_hi: int) -> int:
    """Rows of a window op's output (floor mode)."""
    return (int(n_in) + pad_lo + pad_hi - true_kernel(k, dilation)) // int(stride) + 1


def window_input(out: Interval, k: int, stride: int, dilation: int, pad_lo: int,
                 n_in: int) -> tuple[Interval, int, int]:
    """Input rows read by output rows `out` of a window op, in unpadded input
    coordinates and clamped to [0, n_in), with the padding the device must add on
    each side to compute exactly those output rows: `((lo, hi), pad_before,
    pad_after)`. Empty output gives ((0, 0), 0, 0).

    Unclamped, the rows are [a*S - P0, (b-1)*S + tK - P0) (Eqs. 3-4 with the
    device's own share); `pad_before` and `pad_after` are the parts of that range
    outside the input, so `pad_before + (hi - lo) + pad_after` is the device's
    padded extent. Like the paper's intervals this is an envelope: with a stride
    larger than the true kernel, or a last window that reaches into the padding,
    it can include rows that no window reads (BBGraP's ShapeMaps allow several
    ranges per interval; we keep one range per device).
    """
    a, b = out
    if b <= a:
        return (0, 0), 0, 0
    tk = true_kernel(k, dilation)
    start = a * stride - pad_lo
    end = start + input_extent(b - a, stride, tk)
    lo = min(max(start, 0), n_in)
    hi = min(max(end, lo), n_in)
    return (lo, hi), lo - start, end - hi


def paper_bounds(shares: Sequence[int], k: int, stride: int, dilation: int,
                 pad_lo: int, pad_hi: int) -> list[Interval]:
    """Eqs. 4-6 as printed (with Eq. 3 per device): [Left, Right) per device.
    For reference and tests only; `window_input` is the exact form."""
    tk = true_kernel(k, dilation)
    out, done, n = [], 0, len(shares)
    for i, p in enumerate(shares):
        iv = input_extent(p, stride, tk)
        left = 0 if i == 0 else stride * done - pad_lo
        if i == 0:
            right = iv + left - pad_lo
        elif i == n - 1:
            right = iv + left - pad_hi
        else:
            right = iv + left
        out.append((left, right))
        done += p
    return out


def intersect(a: Interval, b: Interval) -> Interval:
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if hi > lo else (lo, lo)


def length(a: Interval) -> int:
    return max(a[1] - a[0], 0)
