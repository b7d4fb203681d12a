"""What the API proxy lets through: which requests, how large, and whose.

An agent controls every byte it sends the proxy, so each rule admits what it names and
refuses the rest; nothing here lists what to block.

- Routes: the method and the path must be, byte for byte, one of `ROUTES`, the calls the
  Claude Code CLI makes. No allowed path needs a percent-escape, a dot segment, a doubled
  or trailing slash, so any other spelling of a path (`%2e%2e`, `%2F`, `..`, `//`, `\\`,
  NUL, `/v1/messages/batches`) is simply a different path and refused. Decoding first and
  matching the result would only widen this: `/v1%2Fmessages` would then pass. What goes
  upstream is the route's own constant, never the client's spelling of it.
- Query: only `beta=true` survives (the CLI's beta client sends it); anything else in the
  query is dropped, as no parameter of these routes is the agent's to choose.
- Body: a single plain Content-Length of at most `MAX_BODY`, judged from the headers
  before any of the body is read.
"""

from __future__ import annotations

import re
from email.message import Message
from typing import Final
from urllib.parse import parse_qsl

MESSAGES: Final = "/v1/messages"
COUNT_TOKENS: Final = "/v1/messages/count_tokens"
#: The CLI (2.1.x) calls Messages for every turn and count_tokens to size its context; it
#: fetches /v1/models only behind a gateway setting evalsite never gives it.
ROUTES: Final = frozenset({("POST", MESSAGES), ("POST", COUNT_TOKENS)})
#: The API's own limit for Messages and count_tokens bodies is 32 MB (it answers 413 above
#: it), and the CLI means to reach it: a long conversation holding images or PDFs is tens of
#: MB of base64. So the cap is the API's, read as MiB so nothing the API takes is refused.
MAX_BODY: Final = 32 * 1024 * 1024
_DIGITS = re.compile(r"[0-9]{1,12}")


def forwarded_target(method: str, target: str) -> str | None:
    """The path and query to send upstream for a request target; None when not forwarded."""
    path, _, query = target.partition("?")
    if (method, path) not in ROUTES:
        return None
    beta = ("beta", "true") in parse_qsl(query, keep_blank_values=True)
    return path + ("?beta=true" if beta else "")


def declared_length(headers: Message) -> int | None:
    """The body's length from its one Content-Length; None for a body whose end the headers
    do not state plainly (none, several, a malformed value, any Transfer-Encoding)."""
    lengths = headers.get_all("content-length") or []
    if len(lengths) != 1 or headers.get("transfer-encoding") is not None:
        return None
    # int() would also take "+5", " 5" and "5_000"; a length is digits only.
    value = lengths[0].strip()
    return int(value) if _DIGITS.fullmatch(value) else None


def key_of(headers: Message) -> str | None:
    """The key a request presents, as `x-api-key` or as a bearer token."""
    key = headers.get("x-api-key")
    if key:
        return key.strip()
    authorization = headers.get("authorization") or ""
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None
