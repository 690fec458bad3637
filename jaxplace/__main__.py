import sys

try:
    from jaxplace.cli.main import main
except KeyboardInterrupt:  # Ctrl-C while Python is still importing: no traceback
    sys.stderr.write("jaxplace: interrupted\n")
    sys.exit(130)

sys.exit(main())
