"""The Redis cache (REDIS_URL) holds JSON: what Redis holds is read, never run."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.cache.backends.redis import RedisSerializer
from django.test import Client, override_settings

from evalsite.cache import JSONSerializer, redis_cache
from runs.importing import import_workspace
from tests.test_deploy import redis_url  # noqa: F401 (a fixture: a redis-server of our own)

ROOT = Path(__file__).resolve().parents[1]
ITERATION = "/skills/taming-flaky-tests/iterations/4/"
#: What differs on every response of one page: the masked CSRF token and the CSP nonce.
PER_RESPONSE = re.compile(rb'[A-Za-z0-9]{64}|nonce="[^"]*"')


class Planted:
    """A pickle that creates a folder when it is loaded: what an attacker would write."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return os.mkdir, (str(self.marker),)


@pytest.fixture
def redis_cached(redis_url: str) -> None:  # noqa: F811
    """The site's cache as REDIS_URL configures it, on the test's own redis-server."""
    with override_settings(CACHES={"default": redis_cache(redis_url)}):
        yield


def test_a_pickle_planted_in_redis_is_not_run(redis_cached: None, tmp_path: Path) -> None:
    # What Django's own serializer does with such bytes: runs them.
    RedisSerializer().loads(pickle.dumps(Planted(tmp_path / "under-pickle")))
    assert (tmp_path / "under-pickle").is_dir()
    marker = tmp_path / "planted-pickle-ran"
    raw = cache._cache.get_client(write=True)
    raw.set(cache.make_and_validate_key("page"), pickle.dumps(Planted(marker)))

    # Not JSON: read as a miss, so the page is rendered afresh.
    assert cache.get("page") is None
    assert cache.get_many(["page"]).get("page") is None
    assert not marker.exists()


def test_what_the_site_caches_comes_back_as_it_was(redis_cached: None) -> None:
    cache.set_many({"markdown": "<p>ok</p>", "flag": True, "nothing": None})
    cache.add("failures", 0)
    cache.incr("failures")

    assert cache.get_many(["markdown", "flag"]) == {"markdown": "<p>ok</p>", "flag": True}
    assert cache.get("failures") == 1
    assert cache.get("nothing", "default") is None


def test_a_value_json_cannot_hold_is_refused_when_written() -> None:
    from datetime import UTC, datetime

    with pytest.raises(TypeError):
        JSONSerializer().dumps(datetime.now(UTC))


@pytest.mark.django_db
def test_the_pages_read_their_cached_regions_back_from_redis(
    redis_cached: None, client: Client
) -> None:
    import_workspace([ROOT / "runs" / "sample"])
    pages = ["/", "/skills/taming-flaky-tests/", ITERATION, f"{ITERATION}evals/ci-only-timeout/"]

    first = [client.get(url) for url in pages]
    again = [client.get(url) for url in pages]

    assert [page.status_code for page in first] == [200] * len(pages)
    assert [PER_RESPONSE.sub(b"", page.content) for page in again] == [
        PER_RESPONSE.sub(b"", page.content) for page in first
    ]
    assert len(cache._cache.get_client().keys("evalsite:*")) > len(pages)
