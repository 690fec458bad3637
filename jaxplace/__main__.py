import sys

from jaxplace.cli.main import main

sys.exit(main())
