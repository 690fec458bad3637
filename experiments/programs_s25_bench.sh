#!/bin/bash
# Session 25 (issue 51, H1): jp.search per graph on the regal-time suite, cold + warm,
# in git worktrees of the base commit (d43e5e1) and of each variant of search_spec:
#   /tmp/h1_base  HEAD d43e5e1
#   /tmp/h1_full  + a draft layout.py of this session: SUCCESSOR_FLOOR 16 and k > 4
#                 padded to 16 rows in search_spec itself (d0f0a53 moved the k rows to
#                 jp.search's bucket, `solo_bucket`; jp.search's programs are the same)
#   /tmp/h1_s16   + the same with K_ROWS_FLOOR = 1 (successors only)
# run one after the other on the same (shared, 2-core) machine; `time` gives the CPU
# seconds (user + sys of the bench and its worker), less load-dependent than wall.
out=/work/main/experiments/programs_s25_runs
for v in "$@"; do
  cd /tmp/h1_$v || exit 1
  echo "== $v $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
  { time PYTHONPATH=/tmp/h1_$v nice /work/main/.venv/bin/python -m jaxplace bench batch \
      --methods default --count 30 --cache fresh --markdown $out/$v.md --json $out/$v.json ; } 2>&1 \
      | grep -v Warning
done
