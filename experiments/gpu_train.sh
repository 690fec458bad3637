#!/usr/bin/env bash
# One device call: train GPU recipes in sequence (each under its own SIGINT timeout,
# which saves a checkpoint), export each policy, and pack them into $OUT/policies.tgz.
# Usage (on the device): bash experiments/gpu_train.sh SECONDS RECIPE [SECONDS RECIPE ...]
set -u
export PYTHONUNBUFFERED=1
rm -rf /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p runs /tmp/pack
if [ "$1" = decode ]; then  # the default chunking on the GPU (no --chunk-size)
  shift
  for P in 10000 100000; do
    echo "== decode n=200 k=16 P=$P (default chunking)"
    timeout 40 python3 -m jaxplace bench decode --n 200 --k 16 --pop $P --repeat 3 -q
  done 2>&1 | grep -v "^peak\|^window"
fi
while [ $# -ge 2 ]; do
  secs=$1; recipe=$2; shift 2
  name=$(basename "$recipe" .json)
  echo "== $recipe for at most $secs s"
  timeout -s INT "$secs" python3 -m jaxplace.policy.train "$recipe" --out runs/$name \
      --export /tmp/pack/$name 2>&1 | tr '\r' '\n' | grep -v "^\s*$" | tail -4
  cp runs/$name/metrics.jsonl /tmp/pack/$name.metrics.jsonl
  tail -2 runs/$name/metrics.jsonl
  if ! ls /tmp/pack/$name 2>/dev/null; then  # interrupted: bring its last checkpoint
    last=$(ls runs/$name/ckpt_*.msgpack | sort | tail -1); echo "interrupted at $last"
    cp "$last" $OUT/$name.last.msgpack
  fi
done
tar czf $OUT/policies.tgz -C /tmp/pack . && ls -la $OUT
