"""A stage plan in each pipeline framework's own form.

Every exporter takes a `StagePlan` and returns an `Export` (the value, a line to paste,
and the assumptions it rests on), or raises a one-line JaxplaceError when the framework
cannot express the plan. The inference exporters use one model chunk per pipeline
rank, ranks in pipeline order; the training exporters (`export_training`) keep the
schedule, the microbatches and the virtual stages of a training plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from jaxplace.errors import JaxplaceError
from jaxplace.export.plan import StagePlan


@dataclass(frozen=True)
class Export:
    """One framework's form of a plan."""

    framework: str
    value: Any  # a string (Megatron, vLLM) or a JSON-ready dict
    snippet: str  # how to use it: a flag, an environment variable, Python
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"framework": self.framework, "value": self.value, "snippet": self.snippet,
                "assumptions": list(self.assumptions)}

    def render(self) -> str:
        """Text for a terminal: the snippet, then the assumptions."""
        return "\n".join([self.snippet, "", "assumes:",
                          *(f"  - {a}" for a in self.assumptions)])


def _refuse(framework: str, why: str, plan: StagePlan):
    raise JaxplaceError(f"{framework} cannot express this plan: {why}", source=plan.source)


def _contiguous(plan: StagePlan, framework: str) -> None:
    if not plan.contiguous:
        _refuse(framework, f"{plan.first_break()} (each stage must be one run of modules "
                "in model order)", plan)


def _ends(plan: StagePlan, framework: str, what: str) -> None:
    """The pre modules on the first stage, the post modules on the last."""
    last = plan.num_stages - 1
    for m in plan.pre:
        if plan.stage_of(m) != 0:
            _refuse(framework, f"{m} is on stage {plan.stage_of(m)}, but {what} builds "
                    "the embedding on the first stage", plan)
    for m in plan.post:
        if plan.stage_of(m) != last:
            _refuse(framework, f"{m} is on stage {plan.stage_of(m)}, but {what} builds the "
                    f"final norm and the output layer on the last stage ({last})", plan)


def _common(plan: StagePlan) -> tuple[str, ...]:
    return (f"{plan.num_stages} pipeline stages (pipeline-parallel size "
            f"{plan.num_stages}), one chunk per rank (no virtual stages)",
            f"decoder layers are {plan.layer_prefix}.0 .. "
            f"{plan.layer_prefix}.{plan.num_layers - 1}")


def to_megatron(plan: StagePlan) -> Export:
    """Megatron-LM's `--pipeline-model-parallel-layout`: one "|"-separated entry per
    stage, E the embedding, t a decoder layer (t*n: n of them), L the loss with the
    output layer and final norm."""
    _contiguous(plan, "Megatron-LM")
    _ends(plan, "Megatron-LM", "Megatron-LM")
    counts, last = plan.layer_counts(), plan.num_stages - 1
    stages = []
    for s, n in enumerate(counts):
        parts = (["E"] if s == 0 else []) + ([] if n == 0 else ["t" if n == 1 else f"t*{n}"])
        stages.append(",".join(parts + (["L"] if s == last else [])))
    layout = "|".join(stages)
    snippet = (f"--pipeline-model-parallel-size {plan.num_stages} "
               f"--pipeline-model-parallel-layout \"{layout}\"")
    return Export("megatron", layout, snippet, (
        *_common(plan),
        "E (embedding) on the first stage; L (final norm, output layer and loss) on the "
        "last, as Megatron-LM builds them",
        "no multi-token-prediction layers (m); --num-layers equals the t count"))


def to_vllm(plan: StagePlan) -> Export:
    """vLLM's VLLM_PP_LAYER_PARTITION: decoder layers per pipeline rank."""
    _contiguous(plan, "vLLM")
    _ends(plan, "vLLM", "vLLM")
    value = ",".join(str(n) for n in plan.layer_counts())
    snippet = (f"VLLM_PP_LAYER_PARTITION=\"{value}\" vllm serve MODEL "
               f"--pipeline-parallel-size {plan.num_stages}")
    return Export("vllm", value, snippet, (
        *_common(plan),
        "the first rank holds the embedding and the last the final norm and LM head "
        "(vLLM's PPMissingLayer placement)",
        "tensor-parallel size as you choose; each rank is a tensor-parallel group",
        "a 0 in the list (a rank with no decoder layer) is accepted by get_pp_indices, "
        "which checks only the count and the sum"))


def to_deepspeed(plan: StagePlan) -> Export:
    """DeepSpeed PipelineModule partition boundaries: `parts[s]:parts[s+1]` are the
    layer-spec indices of stage s."""
    _contiguous(plan, "DeepSpeed")
    parts = [0]
    for s in range(plan.num_stages):
        parts.append(parts[-1] + sum(1 for x in plan.stage if x == s))
    if any(b == a for a, b in zip(parts, parts[1:], strict=False)):
        _refuse("DeepSpeed", "a stage holds no layer", plan)
    value = {"parts": parts, "layers": list(plan.modules)}
    snippet = ("class PlannedPipe(deepspeed.pipe.PipelineModule):\n"
               "    def _partition_layers(self, method='uniform'):\n"
               f"        self.parts = {parts}\n"
               "        s = self._topo.get_coord(self.global_rank).pipe\n"
               "        self._set_bounds(start=self.parts[s], stop=self.parts[s + 1])")
    return Export("deepspeed", value, snippet, (
        *_common(plan),
        f"the PipelineModule's layer list is exactly these {len(plan.modules)} specs in "
        "this order (embedding, each decoder layer, final norm, head); shift the "
        "boundaries by any extra entries (e.g. lambdas) your list has",
        f"num_stages={plan.num_stages}; no stage is empty (DeepSpeed needs a layer on "
        "every stage)"))


def to_torch_pipelining(plan: StagePlan) -> Export:
    """torch.distributed.pipelining split spec: {module: SplitPoint.BEGINNING} for the
    first module of every stage after the first."""
    _contiguous(plan, "torch.distributed.pipelining")
    spec = {}
    for i in range(1, len(plan.modules)):
        if plan.stage[i] != plan.stage[i - 1]:
            spec[plan.modules[i]] = "BEGINNING"
    lines = ",\n".join(f"    {m!r}: SplitPoint.BEGINNING" for m in spec)
    snippet = ("from torch.distributed.pipelining import SplitPoint, pipeline\n"
               f"split_spec = {{\n{lines}\n}}\n"
               "pipe = pipeline(model, mb_args=(example_input_ids,), split_spec=split_spec)")
    return Export("torch-pipelining", {"split_spec": spec, "num_stages": plan.num_stages},
                  snippet, (
                      *_common(plan),
                      "module names (FQNs) as in the Hugging Face transformers model; "
                      "torch.export traces them in this order",
                      "a split before a module starts a new stage"))


def to_jax(plan: StagePlan) -> Export:
    """A JAX stage -> module map, with each stage's decoder layers as a [start, stop)
    range (for a layer stack scanned with lax.scan)."""
    _contiguous(plan, "a JAX pipeline (stages in model order)")
    stages = plan.stages()
    ranges, start = [], 0
    for n in plan.layer_counts():
        ranges.append([start, start + n])
        start += n
    value = {"stages": {str(s): mods for s, mods in enumerate(stages)},
             "layer_ranges": ranges}
    snippet = f"STAGES = {json.dumps(value['stages'])}\nLAYER_RANGES = {ranges}"
    return Export("jax", value, snippet, (
        *_common(plan),
        "stage s runs its modules in order on mesh position s of the pipeline axis; "
        "module paths as in the config's model (Flax: the same names under params)"))


def to_json(plan: StagePlan) -> Export:
    """The plan itself: the stage of every module and the layers per stage."""
    value = {"modules": list(plan.modules), "stage": list(plan.stage),
             "num_stages": plan.num_stages, "layer_prefix": plan.layer_prefix,
             "layer_counts": plan.layer_counts(), "stages": plan.stages()}
    return Export("json", value, json.dumps(value["layer_counts"]), (
        *_common(plan), "stages numbered in pipeline order"))


TRAINING_SCHEDULES = {
    "gpipe": ("GPipe", None, None),
    "1f1b": ("1F1B", "1F1B (non-interleaved)", "TrainSchedule (1F1B)"),
    "interleaved-1f1b": ("Interleaved1F1B", "interleaved 1F1B", None),
    "zero-bubble": ("InterleavedZeroBubble", None, None),
    "zbv": ("ZBVZeroBubble", None, None),
}


@dataclass(frozen=True)
class TrainingSchedule:
    """The schedule a training plan was made for: stage s of the plan runs on rank
    s mod ranks (chunk s // ranks), or V-shaped for `zbv`."""

    schedule: str = "1f1b"
    n_microbatches: int = 1
    n_virtual: int = 1

    def ranks(self, plan: StagePlan, framework: str) -> int:
        if self.schedule not in TRAINING_SCHEDULES:
            raise JaxplaceError(f"unknown schedule {self.schedule!r}; known: "
                                f"{', '.join(TRAINING_SCHEDULES)}", field="schedule")
        if int(self.n_microbatches) < 1:
            raise JaxplaceError("must be at least 1", field="n_microbatches")
        v = int(self.n_virtual)
        if v < 1 or plan.num_stages % v:
            _refuse(framework, f"{plan.num_stages} stages do not fill {v} chunks per "
                    "rank", plan)
        return plan.num_stages // v


def to_torchtitan(plan: StagePlan, sched: TrainingSchedule) -> Export:
    """torchtitan's `parallelism.module_fqns_per_model_part` (the modules of every
    model part, i.e. every stage, virtual ones included, in pipeline order) with the
    schedule by torch's name."""
    _contiguous(plan, "torchtitan")
    ranks = sched.ranks(plan, "torchtitan")
    name = TRAINING_SCHEDULES[sched.schedule][0]
    parts = plan.stages()
    if any(not p for p in parts):
        _refuse("torchtitan", "a stage holds no module", plan)
    value = {"pipeline_parallel_degree": ranks, "pipeline_parallel_schedule": name,
             "module_fqns_per_model_part": parts,
             "n_microbatches": int(sched.n_microbatches)}
    snippet = ("[parallelism]\n"
               f"pipeline_parallel_degree = {ranks}\n"
               f"pipeline_parallel_schedule = \"{name}\"\n"
               f"module_fqns_per_model_part = {json.dumps(parts)}")
    return Export("torchtitan", value, snippet, (
        f"{plan.num_stages} model parts on {ranks} pipeline ranks "
        f"({sched.n_virtual} per rank"
        + (", V-shaped: part s and 2p - 1 - s on rank s)" if sched.schedule == "zbv"
           else ", part s on rank s mod ranks)"),
        f"{sched.n_microbatches} microbatches: pipeline_parallel_microbatch_size = "
        f"local batch size / {sched.n_microbatches}",
        "module names (FQNs) as in the torchtitan model (tok_embeddings, layers.<i>, "
        "norm, output for Llama); rename if yours differ"))


def to_megatron_training(plan: StagePlan, sched: TrainingSchedule) -> Export:
    """Megatron-LM's layout with virtual stages: one entry per (virtual) stage in
    model order; Megatron places stage s on pipeline rank s mod ranks and runs its
    interleaved 1F1B when there is more than one per rank."""
    ranks = sched.ranks(plan, "Megatron-LM")
    which = TRAINING_SCHEDULES[sched.schedule][1]
    if which is None or (sched.n_virtual > 1 and sched.schedule != "interleaved-1f1b"):
        raise JaxplaceError(f"Megatron-LM has no {sched.schedule!r} schedule with "
                            f"{sched.n_virtual} chunk(s) per rank (it runs 1F1B, "
                            "interleaved with virtual stages)", field="schedule")
    base = to_megatron(plan)
    snippet = (f"--pipeline-model-parallel-size {ranks} "
               f"--pipeline-model-parallel-layout \"{base.value}\" "
               f"--micro-batch-size MBS --global-batch-size "
               f"{sched.n_microbatches}*MBS*DP")
    return Export("megatron", {"layout": base.value, "pipeline_model_parallel_size": ranks,
                               "virtual_stages_per_rank": sched.n_virtual,
                               "schedule": which, "n_microbatches": sched.n_microbatches},
                  snippet, (*base.assumptions[1:],
                            f"{plan.num_stages} stages on {ranks} ranks: stage s on rank "
                            f"s mod {ranks} (Megatron's virtual pipeline order)",
                            f"{sched.n_microbatches} microbatches per step: global batch "
                            "= n_microbatches x micro batch x data-parallel size"))


def to_deepspeed_training(plan: StagePlan, sched: TrainingSchedule) -> Export:
    """DeepSpeed's manual partition with its training schedule (1F1B, one chunk per
    rank), the microbatches as gradient accumulation steps."""
    sched.ranks(plan, "DeepSpeed")
    if sched.schedule != "1f1b" or sched.n_virtual != 1:
        raise JaxplaceError(f"DeepSpeed's pipeline engine runs 1F1B with one chunk per "
                            f"rank, not {sched.schedule!r} with {sched.n_virtual}",
                            field="schedule")
    base = to_deepspeed(plan)
    value = {**base.value, "gradient_accumulation_steps": sched.n_microbatches,
             "schedule": TRAINING_SCHEDULES["1f1b"][2]}
    snippet = (base.snippet + "\n# ds_config: "
               f"{{\"gradient_accumulation_steps\": {sched.n_microbatches}}}")
    return Export("deepspeed", value, snippet, (
        *base.assumptions, f"{sched.n_microbatches} microbatches per step "
        "(DeepSpeed's pipeline micro-batches = gradient_accumulation_steps)"))


#: framework -> exporter(plan, TrainingSchedule) -> Export, for training plans
TRAINING_EXPORTERS = {
    "torchtitan": to_torchtitan,
    "megatron": to_megatron_training,
    "deepspeed": to_deepspeed_training,
}


def export_training(plan: StagePlan, to: str, sched: TrainingSchedule) -> Export:
    """A training plan in framework `to` (a key of TRAINING_EXPORTERS), keeping its
    schedule, microbatches and virtual stages."""
    fn = TRAINING_EXPORTERS.get(to)
    if fn is None:
        raise JaxplaceError(f"unknown framework {to!r} for training plans; known: "
                            f"{', '.join(TRAINING_EXPORTERS)}", field="--to")
    return fn(plan, sched)


#: --to name -> exporter(plan) -> Export.
EXPORTERS = {
    "megatron": to_megatron,
    "deepspeed": to_deepspeed,
    "vllm": to_vllm,
    "torch-pipelining": to_torch_pipelining,
    "jax": to_jax,
    "json": to_json,
}


def export_plan(plan: StagePlan, to: str) -> Export:
    """The plan in framework `to` (a key of EXPORTERS)."""
    fn = EXPORTERS.get(to)
    if fn is None:
        raise JaxplaceError(f"unknown framework {to!r}; known: {', '.join(EXPORTERS)}",
                            field="--to")
    return fn(plan)
