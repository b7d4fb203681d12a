"""The transcript viewer: every event in order with its anchor, evidence linking to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from runs.importing import import_workspace
from runs.models import Run
from runs.reading.transcript import RESULT_HEAD_CHARS, events_of, shape
from tests.factories import eval_magic_iteration, write_json
from tests.hostile import HOSTILE, hostile_workspace, unsafe_markup

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
RUN = "/skills/taming-flaky-tests/iterations/3/evals/timezone-boundary-flake/with_skill/1/"


@pytest.fixture
def sample() -> None:
    import_workspace([ROOT / "runs" / "sample"])


def test_turns_are_labelled_by_who_wrote_them() -> None:
    events = events_of(
        [
            {"type": "assistant_message", "ordinal": 1, "round": 1, "text": "Done?"},
            {"type": "user_message", "ordinal": 0, "round": 1, "text": "Do it."},
            {"type": "user_message", "ordinal": 2, "round": 2, "text": "Also this."},
            {
                "type": "user_message",
                "ordinal": 3,
                "round": 3,
                "text": "Yes.",
                "origin": {"responder": "llm"},
            },
        ],
        [],
    )

    assert [(e.ordinal, e.who) for e in events] == [
        (0, "user"),
        (1, "assistant"),
        (2, "scripted turn"),
        (3, "responder (llm)"),
    ]


def test_skill_calls_errors_and_long_results_are_marked() -> None:
    call = {"type": "tool_invocation", "round": 1}
    skill = shape({**call, "ordinal": 1, "name": "Skill", "args": {"skill": "x"}})
    failed = shape({**call, "ordinal": 2, "name": "Bash", "result": "Error: no such file"})
    long = shape({**call, "ordinal": 3, "name": "Read", "result": "x" * 9000})

    assert skill.skill == "x" and not skill.is_error
    assert failed.is_error
    assert long.result_cut and len(long.result) == RESULT_HEAD_CHARS and long.result_size == 9000


def test_the_run_page_anchors_every_event_and_links_evidence_to_it(
    client: Client, sample: None
) -> None:
    html = client.get(RUN).content.decode()

    for ordinal in range(13):
        assert f'id="event-{ordinal}"' in html
    # transcript_check's evidence "matched ordinal 5: …" links to event 5 of this run.
    assert f'<a class="ordinal-link" href="{RUN}#event-5">5</a>' in html
    assert 'class="event tool_invocation skill-call"' in html


def test_the_eval_page_links_evidence_to_each_runs_transcript(client: Client, sample) -> None:
    html = client.get(RUN.split("with_skill")[0]).content.decode()

    assert f'href="{RUN}#event-5"' in html


def test_a_long_tool_result_is_cut_and_loads_whole_on_demand(
    client: Client, tmp_path: Path
) -> None:
    folder = eval_magic_iteration(tmp_path, cells={("alpha", "with_skill"): [{"a1": True}]})
    big = "y" * 50_000
    events = [
        {"type": "user_message", "ordinal": 0, "round": 1, "text": "Read it."},
        {"type": "tool_invocation", "ordinal": 1, "round": 1, "name": "Read", "result": big},
        {"type": "assistant_message", "ordinal": 2, "round": 1, "text": "Read."},
    ]
    write_json(
        folder / "eval-alpha" / "with_skill" / "conversation.json",
        {"status": "completed", "delivered_followups": 0, "events": events},
    )
    import_workspace([tmp_path])
    base = "/skills/demo-skill/iterations/1/evals/alpha/with_skill/1/conversation/"

    fragment = client.get(base, HTTP_HX_REQUEST="true").content.decode()
    assert "y" * 50_000 not in fragment and "y" * RESULT_HEAD_CHARS in fragment
    assert f'hx-get="{base}1/result/"' in fragment and "48.8\xa0KB" in fragment

    whole = client.get(f"{base}1/result/", HTTP_HX_REQUEST="true").content.decode()
    assert "y" * 50_000 in whole
    plain = client.get(f"{base}1/result/")
    assert plain["Content-Type"].startswith("text/plain") and len(plain.content) == 50_000
    assert client.get(f"{base}2/result/").status_code == 404
    assert client.get(f"{base}99/result/").status_code == 404


def test_hostile_text_is_escaped_in_the_transcript_and_the_run(
    client: Client, tmp_path: Path
) -> None:
    import_workspace([hostile_workspace(tmp_path)])
    run = Run.objects.get(condition__name="with_skill")
    html = client.get(run.get_absolute_url()).content.decode()

    assert "unique-hostile-marker" in html
    assert unsafe_markup(html) == []
    assert HOSTILE.splitlines()[0] in html
