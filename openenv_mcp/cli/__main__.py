import sys

from openenv_mcp.cli.main import main

sys.exit(main())
