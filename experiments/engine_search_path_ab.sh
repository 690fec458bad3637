#!/bin/bash
# jp.search per graph, A/B in one command on the same box (issue 51, session 23, H2):
# before = the driver's phase programs, after = search_many's one-problem bucket
# program. Both halves are the same commit ($1, default HEAD) in two clean
# worktrees; the before one has bucket.SEARCH_PATH = "driver" (the only difference).
# Then `bench batch --methods default` in each (cold = a fresh process with an empty
# compile cache, warm = the same searches again in it), the C++ peer once (for the
# wall ratio). Output: /tmp/h2_ab/{before,after,cpp}.{json,md} and the log.
set -u
COMMIT=${1:-HEAD}
OUT=/tmp/h2_ab
mkdir -p $OUT
cd /work/main
for side in before after; do
  rm -rf /tmp/h2_$side; git worktree prune
  git worktree add -f /tmp/h2_$side "$COMMIT" >/dev/null 2>&1 || exit 1
done
sed -i 's/^SEARCH_PATH = "bucket"/SEARCH_PATH = "driver"/' \
  /tmp/h2_before/jaxplace/objectives/throughput/bucket.py
grep -n '^SEARCH_PATH' /tmp/h2_*/jaxplace/objectives/throughput/bucket.py
. /work/main/.venv/bin/activate
export JAXPLACE_CPP_DIR=/tmp/jp_cpp
git -C /tmp/h2_after log --oneline -1
for side in before after cpp; do
  date -u; uptime
  if [ $side = cpp ]; then
    methods=cpp-brkga-10000; tree=/tmp/h2_after
  else
    methods=default; tree=/tmp/h2_$side
  fi
  (cd $tree && PYTHONPATH=$tree python -c "import jaxplace; print(jaxplace.__file__)" &&
   PYTHONPATH=$tree nice python -m jaxplace bench batch --methods $methods \
     --json $OUT/$side.json --markdown $OUT/$side.md)
  echo "$side rc=$?"
done
date -u; uptime
