"""A staticfiles finder that serves plotly.js from the installed plotly package.

plotly (Python) bundles the plotly.js build it was made for; serving that file keeps the
browser's plotly.js in step with the figures Python writes, and keeps a 4.6 MB file out of
the repository. It works with `collectstatic`, `findstatic`, runserver and whitenoise
(which reads finders when WHITENOISE_USE_FINDERS is on).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.contrib.staticfiles import finders
from django.contrib.staticfiles.finders import BaseFinder
from django.contrib.staticfiles.utils import matches_patterns
from django.core.checks import CheckMessage, Error
from django.core.files.storage import FileSystemStorage

PREFIX = "vendor"
FILENAME = "plotly.min.js"
STATIC_PATH = f"{PREFIX}/{FILENAME}"


def plotly_js_path() -> Path:
    """Return where the installed plotly package keeps its plotly.min.js."""
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / FILENAME


class PlotlyJsFinder(BaseFinder):
    """Expose exactly one file, vendor/plotly.min.js, from the plotly package's data."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.source = plotly_js_path()
        self.storage = FileSystemStorage(location=self.source.parent)
        # collectstatic and whitenoise both place a storage's files under its `prefix`.
        self.storage.prefix = PREFIX

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        """Report a plotly install without its bundled plotly.js."""
        if self.source.is_file():
            return []
        return [
            Error(
                f"plotly.js is missing: {self.source} does not exist",
                hint="Reinstall plotly (pip install --force-reinstall plotly).",
                obj=self,
                id="evalsite.E001",
            )
        ]

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str]:
        """Return the absolute path of vendor/plotly.min.js (a list when find_all), else []."""
        if kwargs:
            # Callers written before Django 5.2 pass `all`; Django maps it (warning) until 6.1.
            find_all = self._check_deprecated_find_param(find_all=find_all, **kwargs)
        directory = str(self.source.parent)
        if directory not in finders.searched_locations:
            finders.searched_locations.append(directory)
        found = os.path.normpath(path).replace(os.sep, "/") == STATIC_PATH
        found = found and self.source.is_file()
        if not found:
            # [] even without find_all, as Django's finders do: finders.find() would turn a
            # None into a match.
            return []
        location = str(self.source)
        return [location] if find_all else location

    def list(self, ignore_patterns: list[str] | None) -> Iterator[tuple[str, FileSystemStorage]]:
        """Yield (path within the storage, storage) for plotly.min.js, unless ignored."""
        if not self.source.is_file():
            return
        # whitenoise passes None; collectstatic a list of glob patterns.
        if ignore_patterns and matches_patterns(FILENAME, ignore_patterns):
            return
        yield FILENAME, self.storage
