#!/bin/bash
# the before half of the issue-51 pair (session 25): d43e5e1 (session 24's final code) in a clean worktree,
# quiet machine (helpers stopped), run back to back with after.sh, C++ peer in the same run
rm -rf /tmp/before25; cd /work/main && git worktree add -f /tmp/before25 d43e5e1 >/dev/null 2>&1
cd /tmp/before25
. /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/before25 JAXPLACE_CPP_DIR=/tmp/jp_cpp
mkdir -p /tmp/quiet25; date; uptime; git log --oneline -1
python -c "import jaxplace; print(jaxplace.__file__)"
python -m jaxplace bench batch --methods many,default,cpp-brkga-10000 --json /tmp/quiet25/before.json --markdown /tmp/quiet25/before.md
echo rc=$?; date; uptime
