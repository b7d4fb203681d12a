"""Fixtures of the queued-campaign tests: a workspace, the fake API, Celery run in-process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalsite.celery import app
from grading.campaigns import worker
from tests.fakeapi import FakeAnthropic
from tests.grading.test_runevals import good_agent


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_API_MAX_RETRIES = 2
    settings.EVALSITE_API_TIMEOUT = 10
    settings.STORAGES = {
        **settings.STORAGES,
        "runs": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "store")},
        },
    }
    return settings.EVALSITE_WORKSPACE_DIR


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(good_agent) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield fake
    assert not fake.errors, fake.errors


@pytest.fixture
def celery_here(settings) -> Iterator[None]:
    """Tasks run in this process as they are sent (the workflow and the worker's code, with
    no broker); the real broker and workers are test_workers.py's."""
    settings.CELERY_BROKER_URL = "memory://"
    before = app.conf.task_always_eager, app.conf.broker_url
    app.conf.task_always_eager, app.conf.broker_url = True, "memory://"
    worker._runners.clear()
    yield
    app.conf.task_always_eager, app.conf.broker_url = before
    worker._runners.clear()


@pytest.fixture
def celery_held(celery_here: None) -> None:
    """Tasks are sent to an in-memory broker no worker reads: the campaign stays queued."""
    app.conf.task_always_eager = False
