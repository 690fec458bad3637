#!/bin/bash
cd /tmp/before
. /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/before JAXPLACE_CPP_DIR=/tmp/jp_cpp
date; uptime
python -c "import jaxplace; print(jaxplace.__file__)"
python -m jaxplace bench batch --methods many,default,cpp-brkga-10000 --json /tmp/quiet/before.json --markdown /tmp/quiet/before.md
echo rc=$?; date; uptime
