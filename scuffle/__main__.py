"""``python -m scuffle ...``: the same as the ``scuffle`` command (scuffle.game.cli)."""
import sys

from scuffle.game.cli import main

sys.exit(main())
