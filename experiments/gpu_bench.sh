#!/usr/bin/env bash
# The one prepared GPU benchmark of issue 52: `jaxplace bench gpu` on a lent GPU, the
# JSON + markdown table and the log written to $OUT. One device call:
#
#   run(command="bash experiments/gpu_bench.sh 380", timeout_s=560, carry=[".whl"])
#
# The next lending (after the fourth lending, session 25, experiments/gpu.md): the
# islands sweep ran (fused repeats bit for bit inside the islands; the warm wall was
# the k <= 4 MIP polish run one problem after another, ~15 s of 19 s). The polishes
# of a group now run side by side on the host's cores; first call, the suite part
# with the library's defaults (fused islands, default budget, polish pool):
#
#   run(command="PARTS=suite,islands ISLANDS='4x1024x20' ISLAND_IMPLS=fused "
#       "ISLANDS_CHECK_S=0 bash experiments/gpu_bench.sh 330", timeout_s=420,
#       carry=[".whl"])
#
# TOTAL (default 300 s) bounds the bench; under it the bench's own parts are written as
# they finish, so a timeout keeps the parts done before. Keep timeout_s above TOTAL and
# leave device time for a second call.
#
# Before the call (on the development machine, with internet): the wheels the GPU
# image lacks, for its Python (the image of 2026-11-24: Python 3.12, jax 0.11.2 + CUDA
# 13, flax 0.12.10), into the git-ignored .whl/ folder carried along:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl \
#       evosax==0.3.2 highspy==1.15.1 optax==0.2.8 dotmap
# jaxplace itself runs from the working tree (PYTHONPATH), not installed.
#
# Env: DETERMINISTIC=1 adds XLA_FLAGS=--xla_gpu_deterministic_ops=true (issue 52 asks
# which flags give run-to-run identical results and what they cost); PARTS overrides
# the bench's parts (default all four: decoder,train,suite,islands); ISLANDS (island
# shapes IxPxG, space-separated) and ISLAND_IMPLS (auto,lanes,fused) the islands
# part's rows; ISLANDS_CHECK_S=0 skips the final islands check. The suite part
# runs search_many's automatic mode (island BRKGA on a GPU) in a fresh process; the
# islands part runs search_many(mode="islands") cold and warm in one process and says
# whether the warm pass repeats the cold one bit for bit (without DETERMINISTIC=1 that
# answers the run-to-run question for the default flags).
set -u
TOTAL=${1:-300}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" > /dev/null; then
  rm -rf /tmp/site
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
if [ "${DETERMINISTIC:-0}" = 1 ]; then
  export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_deterministic_ops=true"
fi
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
  python3 -c "import jax, flax; print('jax', jax.__version__, 'flax', flax.__version__, jax.devices())"
  nproc
  g++ --version | head -1 || echo "no g++: the suite runs without the C++ peer"
  echo "XLA_FLAGS=${XLA_FLAGS:-}"
} 2>&1 | tee "$OUT/env.log"
# the kernel-level check first (seconds): does the fused kernel compile and agree?
timeout 75 python3 - <<'EOF' 2>&1 | tee "$OUT/fused_check.log"
import time, numpy as np, jaxplace as jp
from jaxplace.bench.gpu import dag_problem, max_rel_error
from jaxplace.decoder import evaluate
p = dag_problem(200, 0)
X = np.random.default_rng(0).random((4096, 200), dtype=np.float32)
want = jp.reference.evaluate_reference(p, X[:32])
print("library default here:", jp.Evaluator(p).impl, flush=True)
for impl in ("lanes", "fused"):
    t = time.perf_counter(); c = evaluate(p, X, impl=impl, window=None)
    t1 = time.perf_counter(); c2 = evaluate(p, X, impl=impl, window=None)
    print(impl, "first", round(t1 - t, 2), "s, warm", round(time.perf_counter() - t1, 3),
          "s, max rel error", max_rel_error(c[:32], want), "run-to-run identical",
          bool(np.array_equal(c, c2)), flush=True)
EOF
SHAPES=()
for shape in ${ISLANDS:-}; do SHAPES+=(--islands "$shape"); done
timeout -s INT "$TOTAL" python3 -m jaxplace bench gpu --size gpu --out "$OUT" \
    ${PARTS:+--parts "$PARTS"} ${ISLAND_IMPLS:+--island-impls "$ISLAND_IMPLS"} \
    ${SHAPES[@]+"${SHAPES[@]}"} 2>&1 | tee "$OUT/bench_gpu.log"
echo "exit ${PIPESTATUS[0]}"
# search_many's island mode on 6 suite graphs, twice (cold, warm): seconds, and the
# answer to "bit-identical run to run" from a second, smaller run (ISLANDS_CHECK_S)
[ "${ISLANDS_CHECK_S:-60}" = 0 ] || timeout "${ISLANDS_CHECK_S:-60}" python3 - <<'EOF' 2>&1 | tee "$OUT/islands_check.log"
import time, numpy as np, jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.search.many import search_many
probs = [jp.Problem(g, k) for _, g, k in instances(6, [4, 8, 16], 0)]
runs = []
for label in ("cold", "warm"):
    t = time.perf_counter()
    runs.append(search_many(probs, mode="islands", exact=False, polish=False))
    r = runs[-1][0]
    print(label, round(time.perf_counter() - t, 2), "s; islands", r.info["islands"], "x",
          r.info["population"], r.info.get("impl"), "; evaluations", [x.evaluations for x in runs[-1]],
          "; costs", [round(x.cost, 4) for x in runs[-1]], flush=True)
print("bit-identical", all(a.cost == b.cost and np.array_equal(a.priorities, b.priorities)
                           for a, b in zip(*runs)))
EOF
ls -la "$OUT"
