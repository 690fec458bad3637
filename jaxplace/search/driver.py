"""Compiled search loop: any ask/tell program over the batched decoder, in scan chunks.

A *program* is a hashable, static description of one search (an evosax algorithm, a
random sampler, a local search) with two pure functions:

    init(data, key, X0) -> carry           X0: (P0, N) starting candidates, evaluated
    step(data, carry, key) -> (carry, X, f)  X: (P, N) candidates of one step, f: (P,)

or, with `fused_init = True`, `blank(data, key, X0) -> carry` (no evaluation; X0 is
evaluated by the first `init_steps` steps of the chunk itself), so that a search
compiles a single program (the chunk) instead of an init program and a chunk: the
decoder inside each compiled program costs seconds of XLA compile on a CPU.

`data` is a pytree of device arrays (the padded DeviceGraph and friends), passed as
an argument, so one compiled chunk serves every graph of the same padded shape. The
driver runs `chunk` steps per compiled call with `lax.scan`, tracks the best candidate
on device, and between chunks (on the host) updates the progress bar, checks the time
limit and the target cost, and keeps the best so far if Ctrl-C arrives.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.progress import bar
from jaxplace.search.result import History

#: Decoder evaluations per compiled chunk, roughly (progress and time-limit granularity).
CHUNK_EVALUATIONS = 2048


@dataclass
class LoopOutcome:
    """What `run_program` hands back (host arrays)."""

    best_x: np.ndarray  # (N,) float32
    best_f: float
    evaluations: int
    history: History
    interrupted: bool
    carry: object = None
    stale: bool = False  # stopped by `patience`


def _scan_chunk(program, data, carry, best_x, best_f, keys):
    def body(c, key):
        inner, bx, bf = c
        inner, X, f = program.step(data, inner, key)
        f = jnp.where(jnp.isnan(f), jnp.inf, f)
        i = jnp.argmin(f)
        better = f[i] < bf
        bx = jnp.where(better, X[i], bx)
        bf = jnp.where(better, f[i], bf)
        return (inner, bx, bf), bf

    (carry, best_x, best_f), trace = jax.lax.scan(body, (carry, best_x, best_f), keys)
    return carry, best_x, best_f, trace


_chunk = jax.jit(_scan_chunk, static_argnums=(0,), donate_argnums=(2,))


@partial(jax.jit, static_argnums=(0,))
def _init(program, data, key, X0):
    carry, f0 = program.init(data, key, X0)
    f0 = jnp.where(jnp.isnan(f0), jnp.inf, f0)
    i = jnp.argmin(f0)
    return carry, X0[i], f0[i]


def run_program(program, data, key: jax.Array, X0, steps: int, *,
                time_limit: float | None = None, target: float | None = None,
                progress: bool | None = None, desc: str = "search",
                start: float | None = None, chunk: int | None = None,
                total: int | None = None, pbar=None, evaluations0: int = 0,
                ratio_to: float | None = None, patience: int | None = None,
                update=None) -> LoopOutcome:
    """Run `steps` steps of `program` after evaluating X0 (P0, N), in compiled chunks.

    Args:
        time_limit: stop after the chunk during which this many seconds (since `start`)
            passed.
        target: stop as soon as the best cost is <= target.
        ratio_to: shown in the progress bar as best / ratio_to (the lower bound).
        pbar: an open progress bar to update instead of opening one.
        patience: stop (not counted as interrupted) once this many evaluations passed
            without improving the best cost (checked between chunks).
        chunk: steps per compiled chunk (default: a divisor of `steps` near
            CHUNK_EVALUATIONS / evaluations per step); steps beyond a multiple are
            dropped.
        update: `update(carry, data) -> data`, called on the host between chunks
            (e.g. to refocus a local search on the current incumbent's bottleneck);
            the returned arrays must keep their shapes (no recompile).
    """
    start = time.perf_counter() if start is None else start
    per_step = program.evaluations_per_step
    X0 = jnp.asarray(X0, jnp.float32)
    key, k0 = jax.random.split(key)
    fused = getattr(program, "fused_init", False)
    if fused:  # X0 is evaluated inside the first step: no separate compiled init
        carry = program.blank(data, k0, X0)
        best_x, best_f = X0[0], jnp.asarray(jnp.inf, jnp.float32)
        evals = 0
        steps += program.init_steps
        hist_e, hist_t, hist_b = [], [], []
    else:
        carry, best_x, best_f = _init(program, data, k0, X0)
        evals = X0.shape[0]
        hist_e, hist_t, hist_b = [evaluations0 + evals], [None], [None]
    if chunk:  # exactly this many steps per chunk (shapes recur across calls)
        chunk = max(1, min(chunk, steps))
    else:
        chunk = _chunk_size(steps, math.ceil(CHUNK_EVALUATIONS / per_step))
    steps = steps // chunk * chunk  # equal chunks, one compile
    done, interrupted, stale = 0, False, False
    last_gain = evals
    own_bar = pbar is None
    if own_bar:
        pbar = bar(total or (evals + steps * per_step), desc, enabled=progress)
    try:
        bf = float(best_f)
        if not fused:
            hist_t[0], hist_b[0] = time.perf_counter() - start, bf
        pbar.update(evals)
        _postfix(pbar, bf, ratio_to)
        # a fused program evaluates X0 in its first chunk: always run that one
        while done < steps and not (_stop(bf, target, time_limit, start)
                                    and not (fused and done == 0)):
            if update is not None and done:
                data = update(carry, data)
            c = min(chunk, steps - done)
            key, sub = jax.random.split(key)
            keys = jax.random.split(sub, c)
            out = _chunk(program, data, carry, best_x, best_f, keys)
            trace = np.asarray(out[3], dtype=np.float64)  # blocks until the chunk is done
            carry, best_x, best_f = out[0], out[1], out[2]
            now = time.perf_counter() - start
            done += c
            evals += c * per_step
            hist_e.extend(evaluations0 + evals - per_step * np.arange(c - 1, -1, -1))
            hist_t.extend([now] * c)
            hist_b.extend(trace.tolist())
            if trace[-1] < bf:
                last_gain = evals - per_step * (c - 1 - int(np.argmax(trace == trace[-1])))
            bf = float(trace[-1])
            pbar.update(c * per_step)
            _postfix(pbar, bf, ratio_to)
            if patience is not None and evals - last_gain >= patience:
                stale = True
                break
        interrupted = (done < steps and not stale
                       and not (target is not None and bf <= target))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if own_bar:
            pbar.close()
    history = History(np.asarray(hist_e, np.int64), np.asarray(hist_t, np.float64),
                      np.asarray(hist_b, np.float64))
    return LoopOutcome(np.asarray(best_x, np.float32), float(best_f), evals, history,
                       interrupted, carry, stale)


def _chunk_size(steps: int, want: int) -> int:
    """Steps per compiled chunk: a divisor of `steps` near `want` when there is one
    (so no step of the budget is dropped), else `want` (dropping < chunk steps)."""
    want = max(1, min(steps, want))
    if steps <= want:
        return max(steps, 1)
    divs = [d for d in range(max(1, want // 2), 2 * want + 1) if steps % d == 0]
    return min(divs, key=lambda d: (abs(d - want), d)) if divs else want


def _stop(best: float, target, time_limit, start) -> bool:
    if target is not None and best <= target:
        return True
    return time_limit is not None and time.perf_counter() - start >= time_limit


def _postfix(pbar, best: float, lb: float | None) -> None:
    if lb:
        pbar.set_postfix_str(f"best={best:.6g} ratio={best / lb:.4f}", refresh=False)
    else:
        pbar.set_postfix_str(f"best={best:.6g}", refresh=False)


__all__ = ["CHUNK_EVALUATIONS", "LoopOutcome", "run_program"]
