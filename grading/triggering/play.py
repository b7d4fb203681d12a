"""One trigger session: a fresh task folder, the skill staged with the description under
test, one turn of the harness to its final message, and which skill that turn loaded.

A session that runs past its time, reaches its call limit before its final message or
fails is recorded as TIMEOUT or ERROR with what it did so far: never as "not triggered"
(skill-creator's runner counts a timeout as a miss, which makes a broken harness look like
a perfectly precise description).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic

from grading.anthropic_client import MessagesClient
from grading.evaluating.harness import AgentResult, AgentSettings, Dispatch, Harness
from grading.evaluating.runfolder import write_json
from grading.evaluating.skillcalls import turn_skills
from grading.evaluating.taskdir import copy_template

from .plan import Description, TriggerPlan

TIMEOUT = "timeout"
ERROR = "error"
#: A trigger turn needs few calls: load a skill (or not), perhaps look around, answer.
MAX_CALLS = 20
TOKEN_BUDGET = 500_000
DEFAULT_TIMEOUT_SECONDS = 180.0


class TurnTimedOut(Exception):
    """The turn ran past --trigger-timeout."""


class DeadlineClient:
    """The messages harness's client for one session: each call gets what is left of the
    turn's time as its timeout, and none starts once it is spent."""

    def __init__(self, client: MessagesClient, seconds: float):
        self._client = client
        # Not `seconds`: the claude-code harness adds the CLI's API time to a client's.
        self.limit = seconds
        self.deadline = time.monotonic() + seconds
        self.messages = self

    def create(self, **kwargs: Any) -> Any:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TurnTimedOut(f"the turn ran longer than {self.limit:g} s")
        return self._client.messages.create(**kwargs, timeout=left)


@dataclass(frozen=True)
class Session:
    """Which session: description k, query i (both from 1), run r."""

    description: int
    query: int
    run: int

    @property
    def transcript(self) -> str:
        """The conversation's path inside the description's folder."""
        return f"runs/q-{self.query}/run-{self.run}/conversation.json"

    @property
    def env_name(self) -> str:
        return f"env-d{self.description}-q{self.query}-r{self.run}"


@dataclass
class SessionRecord:
    session: Session
    outcome: str
    loaded_skill: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    final_message: str = ""
    error: str = ""
    duration_ms: int = 0
    total_tokens: int = 0
    api_calls: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "run": self.session.run,
            "outcome": self.outcome,
            "loaded_skill": self.loaded_skill,
            "tool_calls": self.tool_calls,
            "final_message": self.final_message,
            "error": self.error,
            "duration_ms": self.duration_ms,
            "total_tokens": self.total_tokens,
            "transcript": self.session.transcript,
        }


@dataclass(frozen=True)
class SessionSettings:
    model: str
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    keep_env: bool = False


def play_session(
    *,
    plan: TriggerPlan,
    session: Session,
    harness: Harness,
    client: MessagesClient,
    settings: SessionSettings,
    folder: Path,
    template: Path,
) -> SessionRecord:
    """Play one session in a task folder of its own under `folder` (the campaign's) and
    write its conversation into the description's folder; what it did, as a record."""
    description = plan.descriptions[session.description - 1]
    query = plan.queries[session.query - 1]
    env = folder / session.env_name
    copy_template(template, env)
    dispatch = _dispatch(plan, description, query.query, env, client, settings)
    started = time.monotonic()
    failure: tuple[str, str] | None = None
    try:
        harness.run(dispatch)
    except Exception as exc:  # noqa: BLE001 - whatever stopped the turn, it is this run's
        failure = _failure(exc)
    agent = dispatch.result
    if not agent.duration_ms:
        agent.duration_ms = round((time.monotonic() - started) * 1000)
    record = _record(plan, session, agent, failure)
    written = folder / f"description-{session.description}" / session.transcript
    written.parent.mkdir(parents=True, exist_ok=True)
    write_json(written, agent.conversation())
    for name, data in agent.artifacts.items():
        write_json(written.parent / name, data)
    if not settings.keep_env:
        shutil.rmtree(env, ignore_errors=True)
    return record


def _dispatch(
    plan: TriggerPlan,
    description: Description,
    query: str,
    env: Path,
    client: MessagesClient,
    settings: SessionSettings,
) -> Dispatch:
    return Dispatch(
        case={"prompt": query},
        env=env,
        skill=plan.skill_under_test(description),
        skill_dir=plan.skill_dir,
        agent=AgentSettings(model=settings.model, max_calls=MAX_CALLS, token_budget=TOKEN_BUDGET),
        client=DeadlineClient(client, settings.timeout),
        result=AgentResult(),
        skill_name=plan.skill.name,
        siblings=tuple(plan.siblings),
    )


def _failure(exc: Exception) -> tuple[str, str]:
    """(TIMEOUT or ERROR, one line) for what stopped a turn."""
    text = " ".join(str(exc).split())[:300]
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    timed_out = isinstance(exc, TurnTimedOut | anthropic.APITimeoutError) or bool(
        getattr(exc, "timed_out", False)
    )
    return (TIMEOUT if timed_out else ERROR), message


def _record(
    plan: TriggerPlan,
    session: Session,
    agent: AgentResult,
    failure: tuple[str, str] | None,
) -> SessionRecord:
    found = turn_skills(
        agent.tool_invocations, subject=plan.skill.name, staged=[s.name for s in plan.siblings]
    )
    if failure is None and agent.status == "stopped":
        failure = (TIMEOUT, f"the turn reached its limit of {MAX_CALLS} API calls unfinished")
    outcome, error = failure if failure else (found.outcome, "")
    return SessionRecord(
        session=session,
        outcome=outcome,
        loaded_skill=found.loaded_skill,
        tool_calls=found.tool_calls,
        final_message=agent.final_message,
        error=error,
        duration_ms=agent.duration_ms,
        total_tokens=agent.usage.total,
        api_calls=agent.usage.calls,
    )
