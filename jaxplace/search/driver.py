"""Compiled search loop: any `Program` over the batched decoder, in scan chunks.

The driver runs `chunk` steps of a program per compiled call with `lax.scan`; the
initial candidates X0 are evaluated by the first `program.init_steps` steps of the
first chunk, so a search compiles one program (the chunk), not an init program and a
chunk (each embeds the decoder: seconds of XLA compile on a CPU). `data` (a
`SearchData` pytree) is an argument, so one compiled chunk serves every graph of the
same padded shape. Between chunks, on the host, it tracks the best candidate,
updates the progress bar and the observer, and checks the `StopRule` (time limit,
target, patience, cancel event); Ctrl-C keeps the best found so far.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.progress import bar
from jaxplace.search.programs import Program, SearchData
from jaxplace.search.result import History
from jaxplace.search.stop import Progress, StopRule

#: Decoder evaluations per compiled chunk, roughly (progress and time-limit granularity).
CHUNK_EVALUATIONS = 2048


@dataclass
class LoopOutcome:
    """What `run_program` hands back (host arrays)."""

    best_x: np.ndarray  # (width,) float32
    best_f: float
    evaluations: int
    history: History
    interrupted: bool
    carry: object = None  # the program's final carry (None after Ctrl-C)
    stale: bool = False  # stopped by `patience`


@dataclass
class Run:
    """Per-search settings the driver needs besides the program.

    Attributes:
        stop: when to stop (time limit since `start`, target, patience, cancel).
        start: perf_counter() at which the whole search started.
        observer: called with a `Progress` after every chunk (from this thread).
        n: real columns of the reported priorities (None: all).
        lb: lower bound shown as a ratio in the progress bar.
        phase: name shown in the bar and in `Progress.phase`.
        pbar: an open progress bar to update (else one is opened per call).
        progress: show a bar (None: only on a terminal).
        evaluations0: evaluations spent before this call (earlier phases).
    """

    stop: StopRule = field(default_factory=StopRule)
    start: float = field(default_factory=time.perf_counter)
    observer: Callable[[Progress], None] | None = None
    n: int | None = None
    lb: float | None = None
    phase: str = "search"
    pbar: Any = None
    progress: bool | None = None
    evaluations0: int = 0


def _loop_chunk(program, data, carry, best_x, best_f, keys, count):
    """`count` (traced, <= len(keys)) steps of `program`; (carry, best_x, best_f,
    trace) with trace[i] the best cost after step i (entries >= count: +inf).

    The step count is a runtime value, so the driver can shorten a chunk to fit a
    deadline without compiling another program."""
    def body(i, c):
        inner, bx, bf, trace = c
        inner, X, f = program.step(data, inner, keys[i])
        f = jnp.where(jnp.isnan(f), jnp.inf, f)
        j = jnp.argmin(f)
        better = f[j] < bf
        bx = jnp.where(better, X[j], bx)
        bf = jnp.where(better, f[j], bf)
        return inner, bx, bf, trace.at[i].set(bf)

    trace = jnp.full(keys.shape[:1], jnp.inf, jnp.float32)
    return jax.lax.fori_loop(0, count, body, (carry, best_x, best_f, trace))


# no buffer donation: after Ctrl-C the caller may still read the last carry
chunk_program = jax.jit(_loop_chunk, static_argnums=(0,))

#: With a time limit, a chunk is shortened to end this far (a share of the time
#: left) before the deadline, from the measured time per step.
DEADLINE_MARGIN = 0.9


def _steps_now(run: Run, c: int, step_time: float | None, first: bool) -> int:
    """Steps of the next chunk: all `c`, unless a time limit is set; then the first
    chunk (which compiles) runs one step and later ones what fits the time left."""
    if run.stop.time_limit is None:
        return c
    if first or step_time is None:
        return 1
    left = run.stop.time_limit - (time.perf_counter() - run.start)
    return max(1, min(c, int(DEADLINE_MARGIN * left / max(step_time, 1e-9))))


@dataclass
class _Loop:
    """Host-side bookkeeping of one `run_program` call."""

    evals: int = 0
    best: float = math.inf
    last_gain: int = 0
    hist_e: list = field(default_factory=list)
    hist_t: list = field(default_factory=list)
    hist_b: list = field(default_factory=list)

    def record(self, run: Run, trace: np.ndarray, per_step: int) -> None:
        c = len(trace)
        self.evals += c * per_step
        now = time.perf_counter() - run.start
        self.hist_e.extend(run.evaluations0 + self.evals
                           - per_step * np.arange(c - 1, -1, -1))
        self.hist_t.extend([now] * c)
        self.hist_b.extend(trace.tolist())
        if trace[-1] < self.best:
            first = int(np.argmax(trace == trace[-1]))
            self.last_gain = self.evals - per_step * (c - 1 - first)
        self.best = float(trace[-1])

    def history(self) -> History:
        return History(np.asarray(self.hist_e, np.int64), np.asarray(self.hist_t, np.float64),
                       np.asarray(self.hist_b, np.float64))


def run_program(program: Program, data: SearchData, key: jax.Array, X0, steps: int,
                run: Run | None = None, *, chunk: int | None = None,
                patience: int | None = None, total: int | None = None,
                update: Callable | None = None) -> LoopOutcome:
    """Run `steps` steps of `program` (plus its init steps on X0), in compiled chunks.

    Args:
        X0: (P0, width) starting candidates.
        run: stop rule, clock, observer and bar (`Run`).
        chunk: steps per compiled chunk (default: a divisor of `steps` near
            CHUNK_EVALUATIONS / evaluations per step); steps beyond a multiple are
            dropped.
        patience: stop (not counted as interrupted) once this many evaluations passed
            without improvement (default: `run.stop.patience`).
        update: `update(carry, data) -> data` on the host between chunks (e.g. to
            refocus a local search); the arrays must keep their shapes (no recompile).
    """
    run = run or Run()
    patience = run.stop.patience if patience is None else patience
    per_step = program.evaluations_per_step
    X0 = jnp.asarray(X0, jnp.float32)
    key, k0 = jax.random.split(key)
    carry = program.blank(data, k0, X0)
    best_x, best_f = X0[0], jnp.asarray(jnp.inf, jnp.float32)
    steps, chunk = _steps_and_chunk(program, steps, chunk)
    loop, done, interrupted, stale = _Loop(), 0, False, False
    step_time = None
    pbar = run.pbar if run.pbar is not None else bar(
        total or steps * per_step, run.phase, enabled=run.progress)
    try:
        _postfix(pbar, loop.best, run.lb)
        # the first chunk always runs: it evaluates X0
        while done < steps and not (done and run.stop.should_stop(loop.best, run.start)):
            if update is not None and done:
                data = update(carry, data)
            c = min(chunk, steps - done)
            c = max(_steps_now(run, c, step_time, done == 0), min(program.init_steps, c))
            key, sub = jax.random.split(key)
            t0 = time.perf_counter()
            out = chunk_program(program, data, carry, best_x, best_f,
                                jax.random.split(sub, chunk), jnp.int32(c))
            trace = np.asarray(out[3], dtype=np.float64)[:c]  # blocks until done
            if done:  # the first chunk's time includes compiling
                step_time = (time.perf_counter() - t0) / c
            carry, best_x, best_f = out[0], out[1], out[2]
            done += c
            loop.record(run, trace, per_step)
            pbar.update(c * per_step)
            _postfix(pbar, loop.best, run.lb)
            _observe(run, loop, best_x)
            if patience is not None and loop.evals - loop.last_gain >= patience:
                stale = True
                break
        interrupted = done < steps and not stale and not run.stop.reached(loop.best)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if run.pbar is None:
            pbar.close()
    return LoopOutcome(np.asarray(best_x, np.float32), float(best_f), loop.evals,
                       loop.history(), interrupted, carry, stale)


def _steps_and_chunk(program: Program, steps: int, chunk: int | None) -> tuple[int, int]:
    """(steps, steps per chunk) of a `run_program` call (the docstring's rule)."""
    steps += program.init_steps
    if chunk:  # exactly this many steps per chunk (shapes recur across calls)
        chunk = max(1, min(chunk, steps))
    else:
        chunk = _chunk_size(steps, math.ceil(CHUNK_EVALUATIONS / program.evaluations_per_step))
    return steps // chunk * chunk, chunk  # equal chunks (one compiled program)


def _observe(run: Run, loop: _Loop, best_x) -> None:
    if run.observer is None:
        return
    x = np.asarray(best_x, np.float32)
    x = x if run.n is None else x[:run.n]
    run.observer(Progress(run.evaluations0 + loop.evals, loop.best, x,
                          time.perf_counter() - run.start, run.phase))


def _chunk_size(steps: int, want: int) -> int:
    """Steps per compiled chunk: a divisor of `steps` near `want` when there is one
    (so no step of the budget is dropped), else `want` (dropping < chunk steps)."""
    want = max(1, min(steps, want))
    if steps <= want:
        return max(steps, 1)
    divs = [d for d in range(max(1, want // 2), 2 * want + 1) if steps % d == 0]
    return min(divs, key=lambda d: (abs(d - want), d)) if divs else want


def _postfix(pbar, best: float, lb: float | None) -> None:
    if lb:
        pbar.set_postfix_str(f"best={best:.6g} ratio={best / lb:.4f}", refresh=False)
    else:
        pbar.set_postfix_str(f"best={best:.6g}", refresh=False)


__all__ = ["CHUNK_EVALUATIONS", "LoopOutcome", "Run", "chunk_program", "run_program"]
