"""The build backend: setuptools' own, with an editable install that type checkers follow.

The repository keeps the card's top-level folders (anim/, components/, systems/, game/,
demo/ and the face, scuffle/) and pyproject.toml maps them under ``scuffle``. For such a
mapping setuptools' default editable install is an import hook (a finder run from a
``.pth``), which mypy and other static tools cannot follow (PEP 660 vs PEP 561: they
never run code), so a host's ``mypy`` could not find ``scuffle``.

This backend is setuptools.build_meta except for ``build_editable``: unless the caller
chose an ``editable_mode``, it asks setuptools for its "strict" mode (a link tree of the
package under ``build/__editable__.*``, put on sys.path by a plain ``.pth`` line, which
mypy reads), then replaces each mapped folder in that tree by one link to the
repository's folder, so a module added later is found without reinstalling (only a new
file directly in the face folder needs ``pip install -e .`` again). Where directories
cannot be linked, setuptools' tree is kept as it made it.

Wheels and sdists are setuptools' own, untouched. The file sits in the face folder
(pyproject's ``backend-path = ["scuffle"]``) so the repository's top level holds only the
card's folders, pyproject.toml and README.md, and the sdist carries it with the package;
the wheel ships it too, inert (``scuffle._build_backend`` is imported by nothing at run time).
"""
from __future__ import annotations

import os
import shutil
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 - every other PEP 517 / 660 hook as is

ROOT = Path(__file__).resolve().parent.parent       # the repository (this file is in scuffle/)
PACKAGE = "scuffle"


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    """setuptools' editable wheel, in a layout static tools can read (see the module)."""
    settings = dict(config_settings or {})
    if any(k.replace("-", "_").lstrip("-") == "editable_mode" for k in settings):
        return _setuptools.build_editable(wheel_directory, settings, metadata_directory)
    settings["editable_mode"] = "strict"
    name = _setuptools.build_editable(wheel_directory, settings, metadata_directory)
    tree = _link_tree(Path(wheel_directory, name))
    if tree is not None:
        _link_folders(tree / PACKAGE)
    return name


def _link_tree(wheel: Path) -> Path | None:
    """The folder the wheel's ``.pth`` puts on sys.path (setuptools' link tree), if any."""
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            if info.filename.endswith(".pth") and "/" not in info.filename:
                for line in z.read(info).decode("utf-8").splitlines():
                    line = line.strip()
                    if line and not line.startswith(("#", "import ")) and Path(line).is_dir():
                        return Path(line)
    return None


def _link_folders(pkg: Path) -> None:
    """Replace each mapped sub-package folder of the tree by a link to the repository's."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir: dict[str, str] = mapping["tool"]["setuptools"]["package-dir"]
    for dotted, folder in package_dir.items():
        parts = dotted.split(".")
        if len(parts) != 2 or parts[0] != PACKAGE:
            continue                      # the face itself stays a tree of file links
        target, link = (ROOT / folder).resolve(), pkg / parts[1]
        if not link.is_dir() or link.is_symlink():
            continue
        aside = link.with_name(link.name + ".files")
        link.rename(aside)
        try:
            os.symlink(target, link, target_is_directory=True)
        except OSError:                   # no directory links here: keep setuptools' tree
            aside.rename(link)
            continue
        shutil.rmtree(aside)
