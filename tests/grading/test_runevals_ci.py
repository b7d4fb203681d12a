"""`runevals --summary/--junit`: the CI files of the iteration a campaign imported, and the
exit status unchanged by them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from junitparser import JUnitXml

from runs.models import Iteration
from tests.fakeapi import FakeAnthropic
from tests.grading.test_runevals import good_agent, make_skill

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(tmp_path: Path, settings, monkeypatch: pytest.MonkeyPatch):
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_SITE_URL = "https://evals.example.com"
    with FakeAnthropic(good_agent) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield fake


def runevals(*args: str) -> str:
    out = io.StringIO()
    call_command("runevals", "--harness", "messages", *args, stdout=out)
    return out.getvalue()


def test_runevals_writes_the_summary_and_junit_of_its_iteration(
    tmp_path: Path, api: FakeAnthropic
) -> None:
    skill = make_skill(tmp_path)

    runevals(str(skill), "--summary", str(tmp_path / "s.md"), "--junit", str(tmp_path / "j.xml"))

    iteration = Iteration.objects.get()
    text = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert text.startswith("<!-- evalsite-summary skill=demo -->\n")
    assert f"### evalsite: `demo` iteration {iteration.number}" in text
    assert f"(https://evals.example.com/skills/demo/iterations/{iteration.number}/)" in text
    xml = JUnitXml.fromfile(str(tmp_path / "j.xml"))
    # 2 evals × 2 conditions; the good agent passes everything it is asked.
    assert xml.tests == 4 and xml.errors == 0


def test_summary_options_are_refused_with_triggers_and_exit_2(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as info:
        runevals(str(make_skill(tmp_path)), "--triggers", "--summary", "-")
    assert info.value.returncode == 2
    assert str(info.value) == "--summary: not with --triggers"
    with pytest.raises(CommandError) as info:
        runevals(str(make_skill(tmp_path / "b")), "--share-as", "nobody")
    assert info.value.returncode == 2
