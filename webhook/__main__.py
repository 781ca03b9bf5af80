"""`python -m webhook` runs the webhook command line."""

import sys

from webhook.cli import main

sys.exit(main())
