"""`python -m certs` runs the certs command line."""

import sys

from certs.cli import main

sys.exit(main())
