"""plotly.js is served from the installed plotly package: finders, collectstatic, whitenoise."""

from __future__ import annotations

import warnings
from pathlib import Path

import plotly
import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client
from django.utils.deprecation import RemovedInDjango61Warning

from evalsite.staticfinders import PlotlyJsFinder, plotly_js_path

FINDER = "evalsite.staticfinders.PlotlyJsFinder"
BUNDLED = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


@pytest.fixture
def plotly_finder(settings):
    # The project's settings may list it already; the tests must not depend on that.
    others = [f for f in settings.STATICFILES_FINDERS if f != FINDER]
    settings.STATICFILES_FINDERS = [*others, FINDER]
    return finders.get_finder(FINDER)


def test_the_source_is_the_bundle_of_the_installed_plotly():
    assert plotly_js_path() == BUNDLED
    assert BUNDLED.is_file()


def test_finders_find_vendor_plotly_min_js(plotly_finder):
    assert finders.find("vendor/plotly.min.js") == str(BUNDLED)
    assert finders.find("vendor/plotly.min.js", find_all=True) == [str(BUNDLED)]
    assert str(BUNDLED.parent) in finders.searched_locations


def test_it_exposes_no_other_file(plotly_finder):
    assert finders.find("plotly.min.js") is None
    assert finders.find("vendor/widgetbundle.js") is None
    assert finders.find("vendor/../package_data/plotly.min.js") is None
    assert plotly_finder.find("vendor/package_data.js") == []
    assert plotly_finder.find("vendor/package_data.js", find_all=True) == []


def test_it_still_accepts_the_pre_5_2_all_keyword(plotly_finder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RemovedInDjango61Warning)
        assert plotly_finder.find("vendor/plotly.min.js", all=True) == [str(BUNDLED)]
    with pytest.raises(TypeError):
        plotly_finder.find("vendor/plotly.min.js", colour=True)


def test_it_lists_one_file_under_the_vendor_prefix(plotly_finder):
    ((path, storage),) = plotly_finder.list([])
    assert (storage.prefix, path) == ("vendor", "plotly.min.js")
    assert storage.path(path) == str(BUNDLED)
    assert list(plotly_finder.list(None)) == [(path, storage)]  # as whitenoise calls it


def test_ignore_patterns_can_leave_it_out(plotly_finder):
    assert list(plotly_finder.list(["*.js"])) == []


def test_the_system_check_passes_with_plotly_installed():
    assert PlotlyJsFinder().check() == []


def test_collectstatic_copies_it_to_static_root(settings, tmp_path):
    # Only this finder, so the test does not depend on what else is in static/.
    settings.STATICFILES_FINDERS = [FINDER]
    settings.STATIC_ROOT = tmp_path / "collected"
    call_command("collectstatic", interactive=False, verbosity=0)
    copied = tmp_path / "collected" / "vendor" / "plotly.min.js"
    assert copied.read_bytes() == BUNDLED.read_bytes()


def test_findstatic_finds_it(plotly_finder, capsys):
    call_command("findstatic", "vendor/plotly.min.js", verbosity=1)
    assert str(BUNDLED) in capsys.readouterr().out


# Closing a response fires request_finished, which looks at database connections.
@pytest.mark.django_db
@pytest.mark.parametrize("autorefresh", [True, False])
def test_whitenoise_serves_it_from_the_finder(settings, plotly_finder, autorefresh, tmp_path):
    # Without autorefresh whitenoise lists every finder's files once, at start-up; with it,
    # it asks finders.find() per request. Both must reach the plotly bundle.
    settings.STATIC_ROOT = tmp_path  # an empty collectstatic output: only finders can serve
    settings.WHITENOISE_USE_FINDERS = True
    settings.WHITENOISE_AUTOREFRESH = autorefresh
    response = Client().get(f"/{settings.STATIC_URL.strip('/')}/vendor/plotly.min.js")
    assert response.status_code == 200
    assert "javascript" in response["Content-Type"]
    assert int(response["Content-Length"]) == BUNDLED.stat().st_size
    response.close()
