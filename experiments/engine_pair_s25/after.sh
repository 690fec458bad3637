#!/bin/bash
# the after half of the issue-51 pair (session 25): HEAD in a clean worktree, the same command as before.sh,
# quiet machine (helpers stopped)
rm -rf /tmp/after25; cd /work/main && git worktree add -f /tmp/after25 HEAD >/dev/null 2>&1
cd /tmp/after25
. /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/after25 JAXPLACE_CPP_DIR=/tmp/jp_cpp
mkdir -p /tmp/quiet25; date; uptime; git log --oneline -1
python -c "import jaxplace; print(jaxplace.__file__)"
python -m jaxplace bench batch --methods many,default,cpp-brkga-10000 --json /tmp/quiet25/after.json --markdown /tmp/quiet25/after.md
echo rc=$?; date; uptime
