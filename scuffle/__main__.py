"""``python -m scuffle ...``: the same as the ``scuffle`` command (scuffle.cli)."""
import sys

from scuffle.cli import main

sys.exit(main())
