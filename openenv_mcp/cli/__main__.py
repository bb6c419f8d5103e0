import sys

from openenv_mcp.cli import main

sys.exit(main())
