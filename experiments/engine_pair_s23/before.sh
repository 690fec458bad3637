#!/bin/bash
# the before half of the issue-51 pair (session 23): 4ba574a in a clean worktree
rm -rf /tmp/before23; cd /work/main && git worktree add -f /tmp/before23 4ba574a >/dev/null 2>&1
cd /tmp/before23
. /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/before23 JAXPLACE_CPP_DIR=/tmp/jp_cpp JAXPLACE_CACHE_DIR=/tmp/quiet23/cache_before
date; uptime; git log --oneline -1
python -c "import jaxplace; print(jaxplace.__file__)"
python -m jaxplace bench batch --methods many,default,cpp-brkga-10000 --json /tmp/quiet23/before.json --markdown /tmp/quiet23/before.md
echo rc=$?; date; uptime
