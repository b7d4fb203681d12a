"""What the runevals benches play: a generated skill, and the fake Messages API in a process.

The fake API (tests/fakeapi.py) runs in a process of its own, as the real one is remote:
in-process, its threads would compete with runevals' for the interpreter.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: A line of a bench's table: name, figure, detail, whether its target is met, the target.
Row = tuple[str, str, str, bool, str]


def make_skill(root: Path, evals: int) -> Path:
    """`root/bench-skill`: `evals` evals that read a fixture and write notes.md."""
    skill = root / "bench-skill"
    (skill / "evals" / "fixtures").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: bench-skill\ndescription: Use when benchmarking.\n---\nBody.\n"
    )
    (skill / "evals" / "fixtures" / "README.md").write_text("# Fixture\n" + "line\n" * 50)
    cases = [
        {
            "id": f"case-{i:02d}",
            "prompt": f"Task {i}: read the README and write notes.md.",
            "expected_output": "notes.md exists.",
            "files": ["fixtures/README.md"],
            "assertions": [
                {
                    "id": "read-first",
                    "type": "transcript_check",
                    "check": "tool_invocation_matches",
                    "pattern": "Read .*README",
                    "must_precede": "first_write",
                },
                {"id": "summary", "type": "llm_judge", "rubric": "Is notes.md a summary?"},
            ],
        }
        for i in range(evals)
    ]
    (skill / "evals" / "evals.json").write_text(
        json.dumps({"skill_name": "bench-skill", "evals": cases})
    )
    return skill


def agent(request: Any) -> Any:
    """The fake API's answers: Read the README, Write notes.md, done; the judge says yes."""
    import re

    from tests.fakeapi import judge_verdict, reply, tool_use

    if request.forced_tool:
        return judge_verdict(True, "notes.md quotes the README", 0.9)
    # The CLI's file tools take absolute paths; its prompt names the task folder.
    found = re.search(r"Primary working directory: ([^\s\\]+)", json.dumps(request.messages))
    root = f"{found.group(1)}/" if found else ""
    turn = request.assistant_turns
    if turn == 0:
        return reply(tool_use("Read", {"file_path": f"{root}fixtures/README.md"}))
    if turn == 1:
        return reply(tool_use("Write", {"file_path": f"{root}notes.md", "content": "Notes.\n"}))
    return reply("Done.")


def serve(connection: Any, delay: float) -> None:
    """The fake API in its own process, as the real one is: it must not share our GIL."""
    sys.path.insert(0, str(ROOT))
    from tests.fakeapi import FakeAnthropic

    with FakeAnthropic(agent, delay=delay) as api:
        connection.send(api.url)
        connection.recv()  # until the bench is done
        connection.send(len(api.message_requests))


class FakeAPI:
    """The running fake API: its URL, and how many calls it answered once the bench is done."""

    def __init__(self, connection: Any):
        self._connection = connection
        self.url: str = connection.recv()

    def calls(self) -> int:
        """Tell the server the bench is done; the number of message requests it answered."""
        self._connection.send("done")
        return self._connection.recv()


@contextlib.contextmanager
def fake_api(delay: float) -> Iterator[FakeAPI]:
    """The fake API answering every call after `delay` seconds, for the duration."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    server = context.Process(target=serve, args=(theirs, delay))
    server.start()
    try:
        yield FakeAPI(ours)
    finally:
        server.join(timeout=10)
        if server.is_alive():
            server.terminate()


def print_rows(rows: list[Row]) -> bool:
    """Print the bench's table; whether every target is met."""
    for name, value, detail, ok, target in rows:
        print(f"{name:18} {value:>10}  {detail:28} {'PASS' if ok else 'FAIL'}  {target}")
    return all(ok for *_, ok, _ in rows)
