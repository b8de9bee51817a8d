"""``python -m game``: the command line (game/cli.py)."""
import sys

from game.cli import main

sys.exit(main())
