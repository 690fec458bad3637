#!/bin/bash
# the after half of the issue-51 pair (session 23): HEAD in a clean worktree, same command as before.sh,
# then search_many with at most 4 programs (one extra row)
rm -rf /tmp/after23; cd /work/main && git worktree add -f /tmp/after23 HEAD >/dev/null 2>&1
cd /tmp/after23
. /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/after23 JAXPLACE_CPP_DIR=/tmp/jp_cpp
date; uptime; git log --oneline -1
python -c "import jaxplace; print(jaxplace.__file__)"
python -m jaxplace bench batch --methods many,default,cpp-brkga-10000 --json /tmp/quiet23/after.json --markdown /tmp/quiet23/after.md
echo rc=$?; date; uptime
python -m jaxplace bench batch --methods many,cpp-brkga-10000 --max-programs 4 --json /tmp/quiet23/after_p4.json --markdown /tmp/quiet23/after_p4.md
echo rc=$?; date; uptime
