"""Compiled search loop: any ask/tell program over the batched decoder, in scan chunks.

A *program* is a hashable, static description of one search (an evosax algorithm, a
random sampler, a local search) with two pure functions:

    init(data, key, X0) -> carry           X0: (P0, N) starting candidates, evaluated
    step(data, carry, key) -> (carry, X, f)  X: (P, N) candidates of one step, f: (P,)

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
                ratio_to: float | None = None) -> LoopOutcome:
    """Run `steps` steps of `program` after evaluating X0 (P0, N), in compiled chunks.

    Args:
        time_limit: stop after the chunk during which this many seconds (since `start`)
            passed.
        target: stop as soon as the best cost is <= target.
        ratio_to: shown in the progress bar as best / ratio_to (the lower bound).
        pbar: an open progress bar to update instead of opening one.
    """
    start = time.perf_counter() if start is None else start
    per_step = program.evaluations_per_step
    X0 = jnp.asarray(X0, jnp.float32)
    key, k0 = jax.random.split(key)
    carry, best_x, best_f = _init(program, data, k0, X0)
    evals = X0.shape[0]
    hist_e, hist_t, hist_b = [evaluations0 + evals], [None], [None]
    chunk = chunk or max(1, min(steps, math.ceil(CHUNK_EVALUATIONS / per_step)))
    if steps > chunk:  # equal chunks, one compile: drop < (number of chunks) steps
        count = steps // chunk
        chunk = steps // count
        steps = chunk * count
    done, interrupted = 0, False
    own_bar = pbar is None
    if own_bar:
        pbar = bar(total or (evals + steps * per_step), desc, enabled=progress)
    try:
        bf = float(best_f)
        hist_t[0], hist_b[0] = time.perf_counter() - start, bf
        pbar.update(evals)
        _postfix(pbar, bf, ratio_to)
        while done < steps and not _stop(bf, target, time_limit, start):
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
            bf = float(trace[-1])
            pbar.update(c * per_step)
            _postfix(pbar, bf, ratio_to)
        interrupted = done < steps and not (target is not None and bf <= target)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if own_bar:
            pbar.close()
    history = History(np.asarray(hist_e, np.int64), np.asarray(hist_t, np.float64),
                      np.asarray(hist_b, np.float64))
    return LoopOutcome(np.asarray(best_x, np.float32), float(best_f), evals, history,
                       interrupted, carry)


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
