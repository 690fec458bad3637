#!/bin/bash
# H3 s24: cold_s24.py search 6, before (456a82e) then after (d2cec6b), back to back, persistent cache off
. /work/main/.venv/bin/activate
for side in before after; do
  if [ $side = before ]; then T=/tmp/h3/wt_before; else T=/tmp/h3/wt_after2; fi
  cd /tmp/h3
  echo "== $side $(date -u +%T) $(uptime | sed 's/.*load/load/') $(git -C $T log --oneline -1 | cut -c1-8)"
  JAXPLACE_CACHE_DIR= PYTHONPATH=$T nice python /work/main/experiments/cold_s24.py search 6 > /tmp/h3/probe_search_$side.log 2>&1
  echo "rc=$? $(date -u +%T) $(uptime | sed 's/.*load/load/')"
done
