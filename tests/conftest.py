from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

#: Property tests check values, not speed: on a busy machine a first example (paying its
#: imports) can take longer than Hypothesis's default 200 ms deadline, a failure that says
#: nothing about the code. Performance is measured in bench/.
settings.register_profile("evalsite", deadline=None)
settings.load_profile("evalsite")

#: The fake Anthropic Messages API's fixtures (fake_api, fake_api_env) for every test.
pytest_plugins = ["tests.fakeapi"]

#: The real third-party result data, read in place (never copied into the project).
SHARED = Path(__file__).resolve().parents[2] / "shared"
REAL_FIXTURES = SHARED / "fixtures" / "real"


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    """Each test starts with an empty cache: no page or login count left by another test."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def real_fixtures() -> Path:
    if not REAL_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures/real is not present")
    return REAL_FIXTURES


@pytest.fixture
def user(db: None):
    """A teammate with an account (not staff)."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("reviewer", password="correct horse battery")


@pytest.fixture
def api(user):
    """A client of the JSON API with the teammate's token, as CI calls it."""
    from django.test import Client

    from accounts.models import ApiToken

    token = ApiToken(user=user, name="CI")
    secret = token.set_secret()
    token.save()
    return Client(headers={"Authorization": f"Bearer {secret}"})


@pytest.fixture
def client(user):
    """Django's test client, logged in: every page needs an account unless shared."""
    from django.test import Client

    logged_in = Client()
    logged_in.force_login(user)
    return logged_in


#: Test modules that start real processes taking seconds each (workers, the deployed site).
SLOW_MODULES = {"test_deploy.py", "test_workers.py"}
#: Fixtures that start the real Claude Code CLI.
SLOW_FIXTURES = {"cli"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`browser` for tests/browser/, `slow` for real processes: `pytest -m "not browser and
    not slow"` is the fast loop, and plain `pytest` still runs everything."""
    for item in items:
        path = item.path
        if "browser" in path.parts:
            item.add_marker(pytest.mark.browser)
        fixtures = set(getattr(item, "fixturenames", ()))
        if path.name in SLOW_MODULES or fixtures & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)
