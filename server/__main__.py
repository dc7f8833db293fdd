"""`python -m kerncast.server` runs the command line (`kerncast lsp` starts the language server)."""

import sys

from kerncast.server.cli import main

sys.exit(main())
