#!/bin/bash
# the before half of the issue-51 pair (session 24): 840f1f2 (session 23's code) in a clean worktree,
# quiet machine (helpers only reading code), C++ peer in the same run
rm -rf /tmp/before24; cd /work/main && git worktree add -f /tmp/before24 840f1f2 >/dev/null 2>&1
cd /tmp/before24
. /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/before24 JAXPLACE_CPP_DIR=/tmp/jp_cpp
date; uptime; git log --oneline -1
python -c "import jaxplace; print(jaxplace.__file__)"
python -m jaxplace bench batch --methods many,default,cpp-brkga-10000 --json /tmp/quiet24/before.json --markdown /tmp/quiet24/before.md
echo rc=$?; date; uptime
