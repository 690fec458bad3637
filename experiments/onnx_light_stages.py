"""Issue 42 record (experiments/onnx_fidelity.md): the onnx package's light models
partitioned (dfs, k = 2, 4, 8), exported as ONNX stages and chained in onnxruntime
against the whole model. Writes into the current folder."""

import glob
import json
import os

import numpy as np
import onnx
import onnxruntime as ort

from jaxplace.cli.main import main
from jaxplace.export.onnx_stages import run_stages

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")

for p in sorted(glob.glob(os.path.join(LIGHT, "*.onnx"))):
    name = os.path.basename(p)[:-5]
    sess = ort.InferenceSession(p, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in inp.shape]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    want = sess.run(None, {inp.name: x})[0]
    res = {}
    for k in (2, 4, 8):
        out = f"{name}_k{k}"
        assert main(["partition", p, "-k", str(k), "--method", "dfs", "-q", "-o",
                     out + ".json"]) == 0
        assert main(["export", out + ".json", "--to", "onnx", "-o", out]) == 0
        got = list(run_stages(out, {inp.name: x}).values())[0]
        with open(os.path.join(out, "plan.json")) as f:
            stages = json.load(f)["num_stages"]
        err = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
        res[k] = (stages, err)
    print(name, res, flush=True)
