"""SIGINT at T seconds into a cold `jaxplace partition` run on a 300-node REGAL graph:
exit code, seconds from the signal to the exit, out.json validity, tracebacks."""
import json
import os
import signal
import subprocess
import time

os.chdir("/tmp/sig")
env = dict(os.environ, JAXPLACE_CACHE_DIR="")
for T in (0.5, 1, 2, 3, 5, 8, 15):
    if os.path.exists("out.json"):
        os.remove("out.json")
    p = subprocess.Popen(["jaxplace", "partition", "g300.json", "-k", "16", "--time-limit",
                          "120", "-o", "out.json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(T)
    t0 = time.perf_counter()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate()
    dt = time.perf_counter() - t0
    try:
        d = json.load(open("out.json"))
        valid = f"valid stopped={d.get('stopped')} bottleneck={d.get('bottleneck')}"
    except Exception as e:
        valid = f"no out.json ({type(e).__name__})"
    print(f"T={T} rc={p.returncode} exit_after={dt:.2f}s {valid} "
          f"traceback={'Traceback' in err} msg={err.strip().splitlines()[-1][:90]!r}", flush=True)
