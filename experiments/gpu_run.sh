#!/usr/bin/env bash
# One device call (see experiments/gpu.md): install the wheels the GPU image lacks, bench
# the decoder at P = 10^3..10^5 against the C++ yardstick, time policy training,
# then train the GPU recipe until the call's time is spent (SIGINT saves a
# checkpoint; the next call resumes it from runs/gnn-v2-gpu, carried back).
# Usage (on the device): bash experiments/gpu_run.sh BENCH(0|1) TOTAL_SECONDS
set -u
start=$(date +%s)
export PYTHONUNBUFFERED=1
rm -rf /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c "import jax, flax, optax, evosax; print('jax', jax.__version__, 'flax', flax.__version__, jax.devices())"
nproc
g++ --version | head -1
JP="python3 -m jaxplace"
if [ "$1" = 2 ]; then
  echo "== decode n=1000 p=0.006 k=16 P=2000 vs yardstick"
  timeout 60 $JP bench decode --n 1000 --p 0.006 --k 16 --pop 2000 --repeat 1 --yardstick .gpu -q 2>&1 | tee $OUT/bench1000.log
  echo "== train speed: gnn-v1 recipe (policy_regal.json), 150 steps on the GPU"
  timeout 120 python3 -m jaxplace.policy.train training/policy_regal.json --out /tmp/speed1 --stop-at 150 2>&1 | tail -5
  cp /tmp/speed1/metrics.jsonl $OUT/speed_regal.jsonl; cat /tmp/speed1/metrics.jsonl
fi
if [ "$1" = 1 ]; then
  {
    for P in 1000 10000 100000; do
      echo "== decode n=200 k=16 P=$P (default chunking) vs yardstick"
      timeout 80 $JP bench decode --n 200 --k 16 --pop $P --repeat 2 --yardstick .gpu -q
    done
    for C in 8192 16384 32768; do
      echo "== decode n=200 k=16 P=100000 chunk=$C"
      timeout 40 $JP bench decode --n 200 --k 16 --pop 100000 --repeat 3 --chunk-size $C -q
    done
    echo "== decode n=1000 p=0.006 k=16 P=10000 chunk=16384 vs yardstick"
    timeout 110 $JP bench decode --n 1000 --p 0.006 --k 16 --pop 10000 --repeat 2 --chunk-size 16384 --yardstick .gpu -q
  } 2>&1 | tee $OUT/bench.log
  {
    echo "== train speed: gnn-v1 recipe (policy_regal.json), 150 steps on the GPU"
    timeout 110 python3 -m jaxplace.policy.train training/policy_regal.json --out /tmp/speed1 --stop-at 150
    cp /tmp/speed1/metrics.jsonl $OUT/speed_regal.jsonl
  } 2>&1 | tee $OUT/speed.log
fi
mkdir -p runs
rem=$(( $2 - ($(date +%s) - start) - 25 ))
echo "== train experiments/recipes/policy_regal_gpu.json for $rem s"
timeout -s INT "$rem" python3 -m jaxplace.policy.train experiments/recipes/policy_regal_gpu.json \
    --out runs/gnn-v2-gpu 2>&1 | tr '\r' '\n' | grep -v "^\s*$" | tail -40
ls -la runs/gnn-v2-gpu
mkdir -p $OUT/run
last=$(ls runs/gnn-v2-gpu/ckpt_*.msgpack | sort -t_ -k2 -n | tail -1)
cp "$last" runs/gnn-v2-gpu/metrics.jsonl runs/gnn-v2-gpu/train_config.json $OUT/run/
tail -3 runs/gnn-v2-gpu/metrics.jsonl
