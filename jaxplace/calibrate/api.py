"""Calibrate a device profile to this machine, and test it on a model it never saw.

    from jaxplace.calibrate import calibrate
    profile = calibrate()                  # microbenchmarks + the built-in models
    save_profile(profile, "cpu.json")      # jaxplace.importers.devices
    plan = plan_pipeline(model, args, k=2, device="cpu.json")

`calibrate` runs the microbenchmarks (`micro`), measures the forward and backward time
of the pipeline stages of a few models (each model planned at several k with the
nominal profile, its stages timed on one thread, `measure`), and fits the profile's
rates to those stages (`fit`), drawn weakly to the microbenchmarks' figures.
`leave_one_out` is the honest test: for each model, fit on the others and predict its
stages; the error before calibration (the nominal profile) is reported beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from jaxplace.calibrate.costs import op_table, stage_times
from jaxplace.calibrate.fit import StageSample, fit_profile
from jaxplace.calibrate.measure import time_plan
from jaxplace.calibrate.micro import MicroResult, run_microbenchmarks
from jaxplace.errors import JaxplaceError
from jaxplace.importers.devices import DeviceProfile, get_device


def builtin_models() -> dict[str, Callable[[], tuple]]:
    """name -> a maker of (module, one microbatch of inputs), seeded: a GPT-like
    transformer, a ResNet-like CNN and an MLP of unequal widths (small enough that one
    thread times a stage in milliseconds)."""
    import torch

    from jaxplace.torch.models import GPT2, ResNet, UnequalMLP

    def gpt():
        torch.manual_seed(0)
        return (GPT2(vocab=512, ctx=64, d=128, layers=4, heads=4).eval(),
                (torch.randint(0, 512, (4, 64)),))

    def cnn():
        torch.manual_seed(0)
        return (ResNet(blocks=(1, 1, 1, 1), width=16, classes=10).eval(),
                (torch.randn(4, 3, 64, 64),))

    def mlp():
        torch.manual_seed(0)
        return UnequalMLP().eval(), (torch.randn(16, 512),)

    return {"gpt": gpt, "cnn": cnn, "mlp": mlp}


@dataclass(frozen=True)
class ModelMeasurement:
    """One model's measured plans: a StageSample per k, and the plans themselves."""

    name: str
    samples: tuple[StageSample, ...]
    plans: tuple = field(repr=False, default=())


def measure_model(name: str, module, args: Sequence, *, ks: Sequence[int] = (2, 3, 4),
                  device: str | DeviceProfile = "cpu", repeats: int = 7,
                  warmup: int = 3, clock: str = "cpu") -> ModelMeasurement:
    """Plan `module` at every k of `ks` (module boundaries, `device`'s roofline) and
    time each plan's stages: the samples a fit reads. Times are the best of `repeats`
    rounds (the least disturbed by other processes), on `clock` ("cpu": the thread's
    CPU time, "wall": wall time, which counts a busy machine's waits)."""
    from jaxplace.torch import plan_pipeline

    samples, plans = [], []
    for k in ks:
        plan = plan_pipeline(module, tuple(args), k=int(k), device=device)
        st = time_plan(plan, module, tuple(args), repeats=repeats, warmup=warmup,
                       clock=clock)
        table = op_table(plan.graph, plan.split.assignment)
        samples.append(StageSample(table, st.fwd_all.min(0), st.bwd_all.min(0), name))
        plans.append(plan)
    return ModelMeasurement(name, tuple(samples), tuple(plans))


def measure_models(models: Mapping[str, Callable[[], tuple]] | None = None,
                   **kwargs) -> dict[str, ModelMeasurement]:
    """`measure_model` of every model (default: `builtin_models()`)."""
    models = builtin_models() if models is None else models
    out = {}
    for name, make in models.items():
        module, args = make()
        out[name] = measure_model(name, module, args, **kwargs)
    return out


def fit_measured(measured: Mapping[str, ModelMeasurement], base: str | DeviceProfile = "cpu",
                 *, micro: MicroResult | None = None, name: str = "measured"
                 ) -> DeviceProfile:
    """The profile fitted to the measured models' stages (link figures and the prior
    from `micro` where given)."""
    from dataclasses import replace

    base = get_device(base)
    samples = [s for m in measured.values() for s in m.samples]
    cal = {"micro": None if micro is None else
           {k: v for k, v in micro.to_dict().items() if k != "raw"}}
    prof = fit_profile(samples, base, rates=None if micro is None else micro.params(),
                       name=name, calibration=cal)
    if micro is not None and micro.link_bw is not None:
        prof = replace(prof, link_bw=float(micro.link_bw),
                       link_latency_s=float(micro.link_latency_s or 0.0))
    return prof


def calibrate(models: Mapping[str, Callable[[], tuple]] | None = None, *,
              base: str | DeviceProfile = "cpu", micro: bool = True, link: bool = True,
              ks: Sequence[int] = (2, 3, 4), repeats: int = 7,
              name: str = "measured") -> DeviceProfile:
    """A device profile of this machine: microbenchmarks (`micro`; `link` the gloo
    ping-pong) and the measured stages of `models` (default: the built-in GPT-like,
    CNN and MLP models), fitted (see the module's docstring)."""
    mr = run_microbenchmarks(link=link) if micro else None
    measured = measure_models(models, ks=ks, device=base, repeats=repeats)
    return fit_measured(measured, base, micro=mr, name=name)


@dataclass(frozen=True)
class HeldOut:
    """Predictions for one model whose stages the fit never saw.

    Attributes:
        model: its name.
        measured, before, after: (stages,) fwd + bwd seconds of every stage of every
            measured plan: measured, predicted by the base profile, by the fitted one.
        profile: the profile fitted on the other models.
        micro_only: the same predicted by the microbenchmarks' figures alone (None
            without microbenchmarks).
    """

    model: str
    measured: np.ndarray
    before: np.ndarray
    after: np.ndarray
    profile: DeviceProfile
    micro_only: np.ndarray | None = None

    @property
    def error_before(self) -> float:
        """Median over stages of |predicted - measured| / measured, base profile."""
        return float(np.median(np.abs(self.before - self.measured) / self.measured))

    @property
    def error_after(self) -> float:
        return float(np.median(np.abs(self.after - self.measured) / self.measured))

    @property
    def error_micro(self) -> float | None:
        if self.micro_only is None:
            return None
        return float(np.median(np.abs(self.micro_only - self.measured) / self.measured))


def leave_one_out(measured: Mapping[str, ModelMeasurement],
                  base: str | DeviceProfile = "cpu", *, micro: MicroResult | None = None
                  ) -> list[HeldOut]:
    """For each model: fit on the others, predict its stages' fwd + bwd."""
    if len(measured) < 2:
        raise JaxplaceError("leave-one-out needs at least 2 models", field="models")
    base = get_device(base)
    out = []
    for held, m in measured.items():
        rest = {k: v for k, v in measured.items() if k != held}
        prof = fit_measured(rest, base, micro=micro, name=f"fit without {held}")
        meas, before, after, mic = [], [], [], []
        for s in m.samples:
            meas.append(s.fwd + s.bwd)
            before.append(np.add(*stage_times(s.table, base)))
            after.append(np.add(*stage_times(s.table, prof)))
            if micro is not None:
                mic.append(np.add(*stage_times(s.table, tuple(micro.params()))))
        out.append(HeldOut(held, np.concatenate(meas), np.concatenate(before),
                           np.concatenate(after), prof,
                           np.concatenate(mic) if mic else None))
    return out
