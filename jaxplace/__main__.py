import os
import sys

try:
    from jaxplace.cli.main import entry
except KeyboardInterrupt:  # Ctrl-C while Python is still importing: no traceback
    sys.stderr.write("jaxplace: interrupted while starting up (loading its modules): no "
                     "result yet, nothing written\n")
    sys.stderr.flush()
    # no interpreter finalization over half-imported modules (XLA's threads included)
    os._exit(130)

entry()
