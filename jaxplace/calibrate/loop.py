"""The closed loop: plan -> run -> measure -> refit -> replan, and the plan's regret.

`closed_loop(module, args, k)` plans a training pipeline with a profile, runs it (2+
gloo processes, wall clock), times its stages in this process (CPU time), refits the
profile's overheads to those stages, replans with the refitted profile and runs the new
plan when it differs. It reports per stage predicted against measured before and after
the refit, and the regret of the final plan: over random perturbations of every op's
forward and backward time by a log-normal factor of the measured error's size, how much
slower than the best split at the module boundaries (under the same perturbation) the
plan's step would be.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jaxplace.calibrate.costs import op_table, op_times
from jaxplace.calibrate.fit import StageSample, fit_profile, profile_params
from jaxplace.calibrate.measure import time_plan
from jaxplace.calibrate.micro import MicroResult
from jaxplace.calibrate.step import boundary_bytes, measure_step, op_stages, predict_step
from jaxplace.errors import JaxplaceError
from jaxplace.importers.devices import DeviceProfile, get_device
from jaxplace.pipeline.schedule import simulate_schedule

#: the most splits the regret enumerates (beyond: a seeded sample of them)
MAX_SPLITS = 400


@dataclass(frozen=True)
class LoopRound:
    """One plan of the loop: its split, predicted and measured per stage and step."""

    stage_starts: tuple[str, ...]
    predicted_stage: np.ndarray  # (stages,) fwd + bwd seconds per microbatch
    measured_stage: np.ndarray  # (stages,) fwd + bwd, CPU seconds in this process
    predicted_step: float
    measured_step: float  # the real run's step, wall seconds
    profile: DeviceProfile

    @property
    def stage_error(self) -> float:
        """Median over stages of |predicted - measured| / measured."""
        m = self.measured_stage
        return float(np.median(np.abs(self.predicted_stage - m) / m))


@dataclass(frozen=True)
class LoopReport:
    """first: the plan of the given profile; second: the replan with the refitted one
    (its run reused when the split did not change); regret of the second plan."""

    first: LoopRound
    second: LoopRound
    regret_mean: float
    regret_max: float
    sigma: float

    def table(self) -> str:
        lines = []
        for name, r in (("first plan", self.first), ("replanned", self.second)):
            lines.append(f"{name} ({r.profile.name}): stages begin at "
                         f"{', '.join(s or '(start)' for s in r.stage_starts)}; step "
                         f"predicted {r.predicted_step * 1e3:.4g} ms, measured "
                         f"{r.measured_step * 1e3:.4g} ms")
            for i, (p, m) in enumerate(zip(r.predicted_stage, r.measured_stage,
                                           strict=True)):
                lines.append(f"  stage {i}: fwd+bwd predicted {p * 1e3:.4g} ms, measured "
                             f"{m * 1e3:.4g} ms ({(p - m) / m:+.1%})")
        lines.append(f"regret of the replanned split under +-{self.sigma:.1%} (log-normal) "
                     f"op-time errors: mean {self.regret_mean:.2%}, max "
                     f"{self.regret_max:.2%}")
        return "\n".join(lines)


def _round(plan, module, args, batch, prof, steps, run=None) -> tuple[LoopRound, object]:
    st = time_plan(plan, module, args)
    pred = predict_step(plan, module, args, prof)
    if run is None:
        run = measure_step(plan, module, batch, steps=steps)
    return LoopRound(tuple(plan.stage_starts), pred.fwd + pred.bwd,
                     st.fwd_all.min(0) + st.bwd_all.min(0), pred.step_time,
                     float(run.step_time), prof), (st, run)


def closed_loop(module, args: Sequence, k: int, *, profile: str | DeviceProfile = "cpu",
                micro: MicroResult | None = None, schedule: str = "gpipe",
                n_microbatches: int = 4, steps: int = 3, perturbations: int = 100,
                seed: int = 0) -> LoopReport:
    """Plan, run, measure, refit, replan (module doc). `args` is one microbatch; the
    run's batch repeats it `n_microbatches` times."""
    import torch

    from jaxplace.torch import from_torch, plan_pipeline

    prof0 = get_device(profile)
    opts = dict(train=True, schedule=schedule, n_microbatches=n_microbatches,
                optimizer="sgd")
    batch = tuple(torch.cat([x] * n_microbatches) for x in args)
    plan0 = plan_pipeline(module, tuple(args), k, device=prof0, **opts)
    first, (st0, run0) = _round(plan0, module, args, batch, prof0, steps)
    graph, ops = from_torch(module, tuple(args), device=prof0)
    table = op_table(graph, op_stages(ops, plan0.stage_starts))
    rates = profile_params(prof0) if micro is None else micro.params()
    sample = StageSample(table, st0.fwd_all.min(0), st0.bwd_all.min(0), "this model")
    prof1 = fit_profile([sample], prof0, rates=rates, name=f"{prof0.name} refit")
    plan1 = plan_pipeline(module, tuple(args), k, device=prof1, **opts)
    same = tuple(plan1.stage_starts) == tuple(plan0.stage_starts)
    second, _ = _round(plan1, module, args, batch, prof1, steps, run0 if same else None)
    sigma = max(second.stage_error, 1e-3)
    mean, worst = regret(module, args, plan1, prof1, sigma=sigma, samples=perturbations,
                         seed=seed)
    return LoopReport(first, second, mean, worst, sigma)


def regret(module, args: Sequence, plan, profile: DeviceProfile, *, sigma: float,
           samples: int = 100, seed: int = 0) -> tuple[float, float]:
    """(mean, max) over `samples` perturbations of (step of `plan`'s split - best step
    over the splits at the module boundaries) / best, every op's forward and backward
    time scaled by exp(N(0, sigma)), sends and optimizer as `predict_step` prices them."""
    from jaxplace.torch import from_torch, module_boundaries

    if sigma < 0 or samples < 1:
        raise JaxplaceError("sigma must be >= 0 and samples >= 1", field="regret")
    graph, ops = from_torch(module, tuple(args), device=profile)
    k = len(plan.stage_starts)
    cuts = sorted(module_boundaries(ops))
    splits = list(itertools.islice(itertools.combinations(cuts, k - 1), 100_000))
    rng = np.random.default_rng(seed)
    if len(splits) > MAX_SPLITS:
        keep = rng.choice(len(splits), MAX_SPLITS, replace=False)
        splits = [splits[i] for i in sorted(keep)]
    mine = tuple(sorted(p for p, f in module_boundaries(ops).items()
                        if f in plan.stage_starts))
    if mine not in splits:
        splits.append(mine)
    stage_of = [np.searchsorted(np.asarray((0, *s)), np.arange(graph.num_nodes),
                                side="right") - 1 for s in splits]
    base = op_table(graph, stage_of[0])
    f0, b0 = op_times(base, tuple(profile_params(profile)))
    launch = profile.launch_s
    out = []
    for _ in range(samples):
        f = f0 * np.exp(rng.normal(0, sigma, len(f0)))
        b = b0 * np.exp(rng.normal(0, sigma, len(b0)))
        steps = []
        for stage in stage_of:
            sf = np.bincount(stage, weights=f, minlength=k)
            sb = np.bincount(stage, weights=b, minlength=k)
            send = profile.link_latency_s + boundary_bytes(graph, stage, profile) / \
                profile.link_bw
            tl = simulate_schedule(plan.schedule, sf, sb, plan.n_microbatches, send=send,
                                   n_virtual=plan.n_virtual)
            params = np.bincount(stage, weights=graph.size_param, minlength=k)
            tensors = np.bincount(stage, weights=(graph.size_param > 0).astype(float),
                                  minlength=k)
            steps.append(tl.step_time + (3 * params / profile.mem_bw
                                         + 2 * tensors * launch).max())
        steps = np.asarray(steps)
        out.append(steps[splits.index(mine)] / steps.min() - 1.0)
    return float(np.mean(out)), float(np.max(out))
