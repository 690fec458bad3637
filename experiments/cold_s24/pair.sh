#!/bin/bash
# H3 s24: bench batch --methods many, before (456a82e worktree) then after (62b9abd worktree), back to back
. /work/main/.venv/bin/activate
for side in before after; do
  if [ $side = before ]; then T=/tmp/h3/wt_before; else T=/tmp/h3/wt_after; fi
  cd $T
  echo "== $side $(date -u +%T) $(uptime | sed 's/.*load/load/') $(git log --oneline -1 | cut -c1-8)"
  PYTHONPATH=$T python -c "import jaxplace; print(jaxplace.__file__)"
  PYTHONPATH=$T nice python -m jaxplace bench batch --methods many --count 30 --cache fresh --json /tmp/h3/pair_$side.json --markdown /tmp/h3/pair_$side.md
  echo "rc=$? $(date -u +%T) $(uptime | sed 's/.*load/load/')"
done
