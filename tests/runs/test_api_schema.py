"""Schemathesis against the API's own OpenAPI document: no 5xx, no response off its schema.

Every operation gets generated requests (valid and invalid) with a real API token over the
bundled sample, through the WSGI application, inside the test's transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from accounts.models import ApiToken
from evalsite.api import api
from runs.importing import import_workspace

ROOT = Path(__file__).resolve().parents[2]

schema = schemathesis.openapi.from_dict(api.get_openapi_schema(path_prefix="/api"))
schema.app = get_wsgi_application()


@pytest.fixture
def keep_connection() -> Iterator[None]:
    """Keep the test's database connection across requests, as Django's test client does.

    Schemathesis calls the WSGI application directly, and Django closes the connection when
    a request starts and finishes, which would end the test's transaction (on PostgreSQL).
    """
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield
    finally:
        for signal in (request_started, request_finished):
            signal.connect(close_old_connections)


@pytest.fixture
def token(user, settings, keep_connection: None) -> str:
    # Schemathesis' WSGI client calls the site "localhost".
    settings.ALLOWED_HOSTS = ["localhost", "testserver"]
    import_workspace([ROOT / "runs" / "sample"])
    found = ApiToken(user=user, name="schemathesis")
    secret = found.set_secret()
    found.save()
    return secret


@pytest.mark.django_db
@schema.parametrize()
@hypothesis_settings(
    max_examples=20,
    derandomize=True,  # the same requests on every CI run: a red run is a real finding
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_the_api_keeps_to_its_schema(case, token: str) -> None:
    case.call_and_validate(
        headers={"Authorization": f"Bearer {token}"},
        checks=[not_a_server_error, response_schema_conformance],
    )
