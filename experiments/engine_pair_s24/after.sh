#!/bin/bash
# the after half of the issue-51 pair (session 24): HEAD in a clean worktree, the same command as before.sh,
# quiet machine (helpers stopped)
rm -rf /tmp/after24; cd /work/main && git worktree add -f /tmp/after24 HEAD >/dev/null 2>&1
cd /tmp/after24
. /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/after24 JAXPLACE_CPP_DIR=/tmp/jp_cpp
date; uptime; git log --oneline -1
python -c "import jaxplace; print(jaxplace.__file__)"
python -m jaxplace bench batch --methods many,default,cpp-brkga-10000 --json /tmp/quiet24/after.json --markdown /tmp/quiet24/after.md
echo rc=$?; date; uptime
