"""Measured device profiles: microbenchmarks of this machine, measured forward and
backward times of pipeline stages, a profile fitted to them (`calibrate`), its
leave-one-model-out test (`leave_one_out`), and the closed loop plan -> run -> measure
-> refit -> replan (`closed_loop`). Needs the `torch` extra.

    from jaxplace.calibrate import calibrate
    from jaxplace.importers.devices import save_profile
    save_profile(calibrate(), "cpu.json")   # then --device cpu.json, device="cpu.json"
"""

from jaxplace.calibrate.api import (
    HeldOut,
    ModelMeasurement,
    builtin_models,
    calibrate,
    fit_measured,
    leave_one_out,
    measure_model,
    measure_models,
)
from jaxplace.calibrate.costs import OpTable, op_table, send_times, stage_times
from jaxplace.calibrate.fit import StageSample, fit_profile
from jaxplace.calibrate.measure import StageTimes, stage_modules, time_plan, time_stages
from jaxplace.calibrate.loop import LoopReport, LoopRound, closed_loop, regret
from jaxplace.calibrate.micro import MicroResult, run_microbenchmarks
from jaxplace.calibrate.step import StepPrediction, measure_step, predict_step

__all__ = [
    "HeldOut",
    "LoopReport",
    "LoopRound",
    "MicroResult",
    "ModelMeasurement",
    "OpTable",
    "StageSample",
    "StageTimes",
    "StepPrediction",
    "builtin_models",
    "calibrate",
    "closed_loop",
    "fit_measured",
    "fit_profile",
    "leave_one_out",
    "measure_model",
    "measure_models",
    "measure_step",
    "op_table",
    "predict_step",
    "regret",
    "run_microbenchmarks",
    "send_times",
    "stage_modules",
    "stage_times",
    "time_plan",
    "time_stages",
]
