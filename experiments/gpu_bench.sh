#!/usr/bin/env bash
# The one prepared GPU benchmark: THE FIRST CALL of the next lending (one device call,
# at most about 470 s of command; parts are written to $OUT as they finish, so a cut
# keeps what ran):
#
#   run(command="bash experiments/gpu_bench.sh 370", timeout_s=480, carry=[".whl"])
#
# It measures, in this order, each part written to $OUT as it finishes:
#  1. a kernel check (seconds): lanes, fused and sparse compile and agree with the
#     float64 reference on one chunk; run to run identical;
#  2. decoder candidates/s: lanes, fused, sparse (registers), sparse-indexed (scratch
#     memory state), sparse-tau (the per-candidate bound at the sample's 10% quantile)
#     at P = 10^4, 10^5, 10^6, n = 200 then 1,000, with the counted element ops per
#     candidate (cells predicted past 15 s, or after 100 s of the part, are skipped);
#  3. the regal-time suite (30 graphs) through search_many's automatic mode (islands
#     on the GPU, device refinement on, the MIP polish by the library's rule), cold in
#     a fresh process and warm, against C++ brkga-10000 on one core of the same host,
#     and whether warm repeats cold bit for bit;
#  4. the same suite through search_many(mode="islands") 4x1024x20 with the polish off
#     and the device refinement on (16 rounds at most): cold, warm, cost / C++, bit for
#     bit (the fourth lending's row with neither: warm 4.0 s, 0.9953x C++);
#  5. the CPU's figure from the same commit on the same host: the suite through
#     search_many on the host's CPUs (JAX_PLATFORMS=cpu, the CPU default mode).
# Record what it printed in experiments/gpu.md.
#
# Dry run on a CPU (tiny sizes, every part, a few minutes; checks that the script and
# the bench run end to end before a lending):
#
#   DRY=1 bash experiments/gpu_bench.sh
#
# TOTAL (first argument, default 370 s) bounds the bench; under it the bench's own
# parts are written as they finish, so a timeout keeps the parts done before. Keep
# timeout_s above TOTAL + about 100 s (the setup and the kernel check, at most 90 s).
#
# Before the call (on the development machine, with internet): the wheels the GPU
# image lacks, for its Python (the image of 2026-11-24: Python 3.12, jax 0.11.2 + CUDA
# 13, flax 0.12.10), into the git-ignored .whl/ folder carried along:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl \
#       evosax==0.3.2 highspy==1.15.1 optax==0.2.8 dotmap
# jaxplace itself runs from the working tree (PYTHONPATH), not installed.
#
# Env: DETERMINISTIC=1 adds XLA_FLAGS=--xla_gpu_deterministic_ops=true; PARTS
# overrides the bench's parts (default here: decoder,suite,islands,cpu_suite); ISLANDS
# (island shapes IxPxG, space-separated), ISLAND_IMPLS (auto,lanes,fused,sparse),
# ISLAND_POLISH (auto,on,off) and REFINE_STEPS (auto or rounds, comma-separated) the
# islands part's rows; DECODER_S the decoder part's seconds; ISLANDS_CHECK_S > 0 adds
# the older islands check on 6 graphs after the bench.
set -u
TOTAL=${1:-370}
OUT=${OUT:-/tmp/out}
SIZE=gpu
if [ "${DRY:-0}" = 1 ]; then  # the CPU dry run: tiny sizes, every part
  export JAX_PLATFORMS=cpu
  SIZE=tiny
  TOTAL=${1:-900}
  OUT=${OUT:-/tmp/out_dry}
  [ "$OUT" = /tmp/out ] && OUT=/tmp/out_dry
fi
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
# the kernel-level check first (seconds): do the kernels compile and agree?
SIZE="$SIZE" timeout 90 python3 - <<'EOF' 2>&1 | tee "$OUT/fused_check.log"
import os, time, numpy as np, jaxplace as jp
from jaxplace.bench.gpu import dag_problem, max_rel_error
from jaxplace.decoder import evaluate
tiny = os.environ["SIZE"] == "tiny"
n, P = (24, 64) if tiny else (200, 4096)
p = dag_problem(n, 0)
X = np.random.default_rng(0).random((P, n), dtype=np.float32)
want = jp.reference.evaluate_reference(p, X[:32])
print("library default here:", jp.Evaluator(p).impl, flush=True)
for impl in ("lanes", "fused", "sparse"):
    t = time.perf_counter(); c = evaluate(p, X, impl=impl, window=None)
    t1 = time.perf_counter(); c2 = evaluate(p, X, impl=impl, window=None)
    print(impl, "first", round(t1 - t, 2), "s, warm", round(time.perf_counter() - t1, 3),
          "s, max rel error", max_rel_error(c[:32], want), "run-to-run identical",
          bool(np.array_equal(c, c2)), flush=True)
EOF
SHAPES=()
for shape in ${ISLANDS:-}; do SHAPES+=(--islands "$shape"); done
[ ${#SHAPES[@]} = 0 ] && [ "$SIZE" = gpu ] && SHAPES=(--islands 4x1024x20)
timeout -s INT "$TOTAL" python3 -m jaxplace bench gpu --size "$SIZE" --out "$OUT" \
    --parts "${PARTS:-decoder,suite,islands,cpu_suite}" \
    --decoder-seconds "${DECODER_S:-100}" --max-cell-seconds 15 \
    --island-impls "${ISLAND_IMPLS:-auto}" --island-polish "${ISLAND_POLISH:-off}" \
    --refine-steps "${REFINE_STEPS:-16}" \
    ${SHAPES[@]+"${SHAPES[@]}"} 2>&1 | tee "$OUT/bench_gpu.log"
echo "exit ${PIPESTATUS[0]}"
# search_many's island mode on 6 suite graphs, twice (cold, warm): seconds, and the
# answer to "bit-identical run to run" from a second, smaller run (ISLANDS_CHECK_S)
[ "${ISLANDS_CHECK_S:-0}" = 0 ] || timeout "${ISLANDS_CHECK_S}" python3 - <<'EOF' 2>&1 | tee "$OUT/islands_check.log"
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
