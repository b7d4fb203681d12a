"""What the Redis cache holds: JSON, so whoever can write to Redis cannot run code here.

Django's RedisCache pickles its values, and unpickling runs whatever the bytes ask for: write
access to Redis would be code execution in every web worker. The site caches only strings
(rendered Markdown, the HTML of `{% cache %}` regions) and integers (failed-login counts),
which JSON holds exactly. A value of another kind is refused when it is written rather than
coming back as something else, and what Redis holds that is not JSON reads as a miss.
"""

from __future__ import annotations

from typing import Any

import orjson

#: orjson would write a dataclass as an object and a datetime as a string, which would come
#: back as a dict and a str: refused instead, so a caller finds out when it writes.
_STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


class JSONSerializer:
    """The `serializer` of Django's RedisCache (OPTIONS), in place of its pickle."""

    def dumps(self, value: object) -> bytes | int:
        # Integers stay Redis integers, as in Django's own serializer, so incr() is Redis's.
        if type(value) is int:
            return value
        return orjson.dumps(value, option=_STRICT)

    def loads(self, data: bytes) -> object:
        try:
            return int(data)
        except ValueError:
            pass
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            # A pickle left by an older evalsite, or bytes someone else wrote: every caller
            # here reads None as "not cached" and renders afresh.
            return None


def redis_cache(url: str) -> dict[str, Any]:
    """The `default` cache with REDIS_URL: shared by every worker and replica, values JSON."""
    return {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": url,
        "KEY_PREFIX": "evalsite",
        "OPTIONS": {"serializer": f"{__name__}.JSONSerializer"},
    }
