#!/bin/bash
# the after half of the issue-51 pair: HEAD in a clean worktree, same command as before.sh
rm -rf /tmp/after; cd /work/main && git worktree add -f /tmp/after HEAD >/dev/null 2>&1
cd /tmp/after
. /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/after JAXPLACE_CPP_DIR=/tmp/jp_cpp
date; uptime; git log --oneline -1
python -c "import jaxplace; print(jaxplace.__file__)"
python -m jaxplace bench batch --methods many,default,cpp-brkga-10000 --json /tmp/quiet/after.json --markdown /tmp/quiet/after.md
echo rc=$?; date; uptime
