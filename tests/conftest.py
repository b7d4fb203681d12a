from __future__ import annotations

from pathlib import Path

import pytest

#: The fake Anthropic Messages API's fixtures (fake_api, fake_api_env) for every test.
pytest_plugins = ["tests.fakeapi"]

#: The real third-party result data, read in place (never copied into the project).
SHARED = Path(__file__).resolve().parents[2] / "shared"
REAL_FIXTURES = SHARED / "fixtures" / "real"


@pytest.fixture
def real_fixtures() -> Path:
    if not REAL_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures/real is not present")
    return REAL_FIXTURES
