"""Kerncast's build backend: setuptools, with one notice of its editable installs answered by the layout.

The distribution maps the import packages `kerncast.analysis` to the folder `analysis/` and `kerncast.server`
to `server/`, so that the library and the front ends stay the project's top-level folders. For an editable
install (`pip install -e .`) setuptools implements such a mapping with an import finder, and then always emits
an `InformationOnly` notice, "Editable installation.", warning that a folder in the working directory named
like the package could take precedence over it during imports. That folder would be `kerncast/`, and the
repository has none (a test checks), so this backend filters that one notice out of the editable build.
Everything else, every other hook and every other setuptools warning, is setuptools' own.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from setuptools import build_meta as _setuptools

build_wheel = _setuptools.build_wheel
build_sdist = _setuptools.build_sdist
get_requires_for_build_wheel = _setuptools.get_requires_for_build_wheel
get_requires_for_build_sdist = _setuptools.get_requires_for_build_sdist
prepare_metadata_for_build_wheel = _setuptools.prepare_metadata_for_build_wheel
get_requires_for_build_editable = _setuptools.get_requires_for_build_editable
prepare_metadata_for_build_editable = _setuptools.prepare_metadata_for_build_editable

#: The start of the notice's text, as setuptools formats it (its summary line).
EDITABLE_NOTICE = r"Editable installation\."


@contextmanager
def without_editable_notice() -> Iterator[None]:
    """Warnings as usual, except setuptools' informational "Editable installation." notice."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=EDITABLE_NOTICE)
        yield


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    """setuptools' editable wheel, without the notice the layout makes moot (see the module docstring)."""
    with without_editable_notice():
        return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
