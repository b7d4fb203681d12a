"""Reading and validating the JSON files of a workspace, with one-line errors.

Parsing is strict (`strictjson`): NaN, numbers no column can hold, duplicate keys and deep
nesting are refused with the file and pointer.

Schemas live in `schemas/` and are compiled once. Validation runs through fastjsonschema
(compiled to Python, ~20× faster than interpreting the schema, which matters for 50,000-file
workspaces); only when a file fails is jsonschema asked for its best-matching error, whose
JSON pointer and wording go into the message.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema
from django.conf import settings

from .errors import ImportFailure
from .strictjson import json_pointer, parse_json, parse_timestamp

__all__ = ["json_pointer", "load", "parse_json", "parse_timestamp", "read_text", "validate"]

SCHEMA_DIR = Path(settings.BASE_DIR) / "schemas"

#: Names of the schema files in `schemas/`, by the kind of file they describe.
SCHEMAS = {
    "evals": "evals.schema.json",
    "swl-evals": "swl-skill-evals.schema.json",
    "skill-creator-evals": "skill-creator-evals.schema.json",
    "grading": "grading.schema.json",
    "run": "run-record.schema.json",
    "conversation": "conversation.schema.json",
    "benchmark": "benchmark.schema.json",
    "conditions": "conditions.schema.json",
    "run-error": "run-error.schema.json",
    "timing": "timing.schema.json",
    "diff-scope": "diff-scope.schema.json",
    "command-check": "command-check.schema.json",
    "stray-writes": "stray-writes.schema.json",
    "guard-denials": "guard-denials.schema.json",
    "permission-denials": "permission-denials.schema.json",
    "skill-creator-grading": "skill-creator-grading.schema.json",
    "skill-creator-benchmark": "skill-creator-benchmark.schema.json",
    "skill-creator-eval-metadata": "skill-creator-eval-metadata.schema.json",
    "skill-creator-feedback": "skill-creator-feedback.schema.json",
}


@cache
def schema(kind: str) -> dict[str, Any]:
    """The parsed JSON Schema for a kind of file."""
    return json.loads((SCHEMA_DIR / SCHEMAS[kind]).read_text(encoding="utf-8"))


@cache
def _fast_validator(kind: str) -> Any:
    document = schema(kind)
    if "2020-12" in document.get("$schema", ""):
        # fastjsonschema stops at draft-07; the few 2020-12 files (SWL evals.json) are small.
        return None
    return fastjsonschema.compile(document)


#: Conversation events are a oneOf of three shapes told apart by `type`. Checked as a oneOf,
#: every event fails two branches, and fastjsonschema raises (and formats) an exception for
#: each: 10x the cost of parsing the file. Checking each event against its own shape gives
#: the same verdict, since the shapes' `type` constants exclude one another.
EVENT_SHAPES = {
    "user_message": "userMessage",
    "assistant_message": "assistantMessage",
    "tool_invocation": "conversationTool",
}


@cache
def _event_validators() -> dict[str, Any]:
    document = schema("conversation")
    return {
        event_type: fastjsonschema.compile(
            {**document["definitions"][name], "definitions": document["definitions"]}
        )
        for event_type, name in EVENT_SHAPES.items()
    }


@cache
def _conversation_without_events() -> Any:
    document = json.loads(json.dumps(schema("conversation")))
    document["properties"]["events"]["items"] = {"type": "object"}
    return fastjsonschema.compile(document)


def _fast_conversation(data: Any) -> None:
    """Validate a conversation.json event by event; JsonSchemaException when it does not fit."""
    _conversation_without_events()(data)
    validators = _event_validators()
    for event in data["events"]:
        check = validators.get(event.get("type"))
        if check is None:
            raise fastjsonschema.JsonSchemaException("unknown event type")
        check(event)


@cache
def _full_validator(kind: str) -> jsonschema.protocols.Validator:
    document = schema(kind)
    cls = jsonschema.validators.validator_for(document)
    return cls(document, format_checker=None)


def validate(data: Any, kind: str, *, display: str) -> None:
    """Raise ImportFailure naming the file and pointer unless `data` fits the kind's schema."""
    fast = _fast_conversation if kind == "conversation" else _fast_validator(kind)
    if fast is not None:
        try:
            fast(data)
            return
        except fastjsonschema.JsonSchemaException:
            pass
    error = jsonschema.exceptions.best_match(_full_validator(kind).iter_errors(data))
    if error is None:
        return
    error = _branch_error(error)
    parts = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        # Point at the missing key itself: "at /summary: missing required key".
        missing = [k for k in error.validator_value if k not in error.instance]
        if missing:
            raise ImportFailure(
                f"missing required key {missing[0]!r} (schema {SCHEMAS[kind]})",
                path=display,
                pointer=json_pointer([*parts, missing[0]]),
            )
    raise ImportFailure(
        f"{_describe(error)} (schema {SCHEMAS[kind]})",
        path=display,
        pointer=json_pointer(parts),
    )


def _branch_error(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For a oneOf whose branches are told apart by a `type` constant (conversation events),
    the error of the branch the object's own type names: "missing round", not "not valid
    under any of the given schemas"."""
    if error.validator != "oneOf" or not error.context:
        return error
    branches: dict[Any, list[jsonschema.ValidationError]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    named = [
        errors
        for errors in branches.values()
        if not any(e.validator == "const" and list(e.relative_path) == ["type"] for e in errors)
    ]
    if len(named) != 1:
        return error
    return jsonschema.exceptions.best_match(named[0]) or error


def _describe(error: jsonschema.ValidationError) -> str:
    """What the schema expected and what the file had, in a few words."""
    got = _short(error.instance)
    if error.validator == "type":
        types = error.validator_value
        expected = " or ".join(types) if isinstance(types, list) else types
        return f"expected {expected}, got {got}"
    if error.validator == "enum":
        return f"expected one of {', '.join(_short(v) for v in error.validator_value)}, got {got}"
    if error.validator == "const":
        return f"expected {_short(error.validator_value)}, got {got}"
    if error.validator == "pattern":
        return f"expected a string matching {error.validator_value}, got {got}"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - known)
        return "unexpected key " + ", ".join(repr(k) for k in extra)
    message = error.message
    return message if len(message) <= 200 else message[:197] + "..."


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def read_text(raw: bytes, *, display: str) -> str:
    """Decode a text file (Markdown, patches) as UTF-8, or raise ImportFailure."""
    try:
        # U+0000 cannot be stored in PostgreSQL text (see strictjson.parse_json).
        return raw.decode("utf-8-sig").replace("\x00", "\ufffd")
    except UnicodeDecodeError as exc:
        raise ImportFailure(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})", path=display
        ) from None


def load(raw: bytes, kind: str | None, *, display: str) -> Any:
    """Parse and (when a kind is given) validate one JSON file."""
    data = parse_json(raw, display=display)
    if kind is not None:
        validate(data, kind, display=display)
    return data
