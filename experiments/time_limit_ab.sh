#!/bin/bash
# A/B of `jaxplace partition ... --time-limit T` process walls: a before tree (BEFORE, a
# folder holding an old jaxplace/, e.g. `git archive <commit> jaxplace | tar -x -C DIR`)
# then the installed (working) tree, cold compile cache, nice'd; load printed per run.
#   BEFORE=/tmp/h3/before experiments/time_limit_ab.sh certify 60   # regal60 --certify
#   BEFORE=/tmp/h3/before experiments/time_limit_ab.sh small        # the CI tests' commands
# Graphs: jaxplace generate regal --seed 1 --n 60 -o /tmp/h3/regal60.json (and --n 2000).
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=$HERE/.venv/bin/python
cd /tmp/h3  # not the repository: `python -m` puts the cwd first on sys.path
export JAXPLACE_CACHE_DIR=
mode=${1:-certify}
for tree in before after; do
  if [ $tree = before ]; then export PYTHONPATH=$BEFORE; else unset PYTHONPATH; fi
  if [ "$mode" = certify ]; then
    cmds=("partition /tmp/h3/regal60.json -k 16 --certify --time-limit ${2:-60} -q -o /tmp/h3/abc_$tree.json")
  else
    cmds=("partition /tmp/h3/regal2000.json -k 16 --time-limit 12 -q -o /tmp/h3/ab_$tree.json"
          "partition /tmp/h3/regal60.json -k 16 --certify --time-limit 8 -q -o /tmp/h3/ab_c_$tree.json")
  fi
  for cmd in "${cmds[@]}"; do
    echo "$tree: $cmd  (load $(cut -d' ' -f1 /proc/loadavg))"
    /usr/bin/time -f "  wall %e s rc %x" nice $PY -m jaxplace $cmd 2>&1 \
      | grep -E "wall|evaluations=|ratio" | cut -c1-160
  done
  if [ "$mode" = certify ]; then
    $PY -c "
import json; d=json.load(open('/tmp/h3/abc_$tree.json')); c=d['certificate']
print('  ', {k: round(v, 1) for k, v in d['timings'].items()}, ' '.join(
    f\"{r['name']}={r['bound']:.1f}/{r['time']:.1f}s\" for r in c['results']))"
  fi
done
echo "end (load $(cut -d' ' -f1 /proc/loadavg))"
