"""The package's version, kept where the game layer can read it (snapshot headers, the
netplay greeting, ``scuffle --version``) without importing the package's face, which
re-exports it as ``scuffle.__version__``. pyproject.toml carries the same string (a test
ties the two)."""
from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.2.0"
