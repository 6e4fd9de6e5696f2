"""`python -m mcptrials.cli`: the same command as `mcptrials`."""

import sys

from mcptrials.cli import main

sys.exit(main())
