"""Search: the query syntax, the index the import keeps exact, the pages and the API."""

from __future__ import annotations

import json
import re
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from grading.reviewing import add_note, override
from runs.importing import import_workspace
from runs.models import AssertionResult, Iteration, Run, Skill
from runs.search import searching
from runs.search.models import SearchDocument
from runs.search.query import QueryError, parse_query
from runs.search.searching import Filters, search
from tests.admin_forms import ChangeForm, admin_save
from tests.factories import eval_magic_iteration, write_json
from tests.hostile import hostile_workspace, unsafe_markup

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_PHRASE = "the title carried the machine's local date"


def found(text: str, **filters: object) -> list[str]:
    """'iteration:eval/condition/run' of every run the search finds, best first."""
    results = search(parse_query(text), Filters(**filters), limit=100)
    return [
        f"{h.run.iteration.number}:{h.run.eval_id}/{h.run.condition.name}/{h.run.run_index}"
        for h in results.hits
    ]


def run_links(html: str) -> list[str]:
    """The runs a results page links to, in order (a group's runs included)."""
    return re.findall(r'class="[^"]*\brun-link\b[^"]*" href="([^"]+)"', html)


def set_final_message(folder: Path, eval_id: str, condition: str, text: str) -> None:
    path = folder / f"eval-{eval_id}" / condition / "run.json"

    record = json.loads(path.read_text())
    record["final_message"] = text
    write_json(path, record)


@pytest.fixture
def sample(db: None) -> None:
    import_workspace([ROOT / "runs" / "sample"])


# The query syntax -------------------------------------------------------------------------


def test_phrases_exclusions_and_prefixes_are_parsed() -> None:
    query = parse_query('timezone "local date" -flaky report*')

    assert query.fts5() == '("timezone" AND "local date" AND "report"*) NOT ("flaky")'
    assert [t.words for t in query.wanted] == [("timezone",), ("local", "date"), ("report",)]


def test_punctuation_splits_words_the_same_way_on_both_databases() -> None:
    assert parse_query("page_size").fts5() == '"page size"'
    assert parse_query("src/report.py").fts5() == '"src report py"'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Type a word"),
        ("   ", "Type a word"),
        ('* - "" ()', "has no word"),
        ("-flaky", "not only what to leave out"),
        ("x" * 501, "at most 500 characters"),
        (" ".join(["w"] * 21), "at most 20 words"),
    ],
)
def test_a_query_with_nothing_to_find_says_why(text: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        parse_query(text)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "text",
    [
        "NEAR(a b)",
        "a OR b",
        '"unclosed',
        "col:term",
        "^start",
        "a AND",
        '"a" "b"*',
        "x*y -*",
        "ü é 中文",
    ],
)
def test_fts5_and_tsquery_operators_are_words_never_syntax(sample: None, text: str) -> None:
    search(parse_query(text), Filters())  # no database error, whatever the operators


# The index --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_phrase_from_a_final_message_finds_its_run(sample: None) -> None:
    hits = search(parse_query(f'"{SAMPLE_PHRASE}"'), Filters()).hits

    assert {h.run.eval_id for h in hits} == {"timezone-boundary-flake"}
    assert hits[0].found_in == "final message"
    assert "<mark>local</mark> <mark>date</mark>" in hits[0].snippet
    assert hits[0].url == f"{hits[0].run.get_absolute_url()}#final-{hits[0].run.pk}"


@pytest.mark.django_db
def test_a_match_in_the_conversation_links_to_its_event(sample: None) -> None:
    hits = search(parse_query('"make the failure happen on demand"'), Filters()).hits
    in_conversation = [h for h in hits if h.event is not None]

    assert in_conversation, [h.found_in for h in hits]
    assert in_conversation[0].url.endswith(f"#event-{in_conversation[0].event}")
    assert in_conversation[0].found_in == f"event {in_conversation[0].event}"
    assert in_conversation[0].event == 2  # the assistant's second message


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's two query shapes")
def test_postgres_finds_the_same_runs_by_its_index_or_by_walking_the_documents(
    sample: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = Skill.objects.get(name="taming-flaky-tests").pk
    searches = [
        ("timezone", {}),
        ('"local date"', {"skill_id": skill}),
        ("test*", {"skill_id": skill, "outcome": "fail"}),
        ("the -timezone", {"condition": "without_skill"}),
        ("the", {"iteration_number": 1}),
    ]
    by_index = [found(text, **filters) for text, filters in searches]
    monkeypatch.setattr(searching, "DENSE_MATCHES", 0)  # every search counts as dense

    assert [found(text, **filters) for text, filters in searches] == by_index
    assert all(by_index[:3])


@pytest.mark.django_db
def test_filters_narrow_by_skill_iteration_condition_and_outcome(sample: None) -> None:
    skill = Iteration.objects.get(skill__name="taming-flaky-tests", number=3).skill
    everywhere = found("timezone", skill_id=skill.pk)

    only_3 = found("timezone", skill_id=skill.pk, iteration_number=3)
    without = found("timezone", skill_id=skill.pk, condition="without_skill")
    passed = found("timezone", skill_id=skill.pk, outcome="pass")
    failed = found("timezone", skill_id=skill.pk, outcome="fail")

    assert 0 < len(only_3) < len(everywhere)
    assert without and all("/without_skill/" in hit for hit in without)
    assert sorted(passed + failed) == sorted(h for h in everywhere if h in passed + failed)
    assert set(passed).isdisjoint(failed)


@pytest.mark.django_db
def test_every_run_is_indexed_once(sample: None) -> None:
    assert SearchDocument.objects.count() == Run.objects.count()


def documents() -> list[tuple[object, ...]]:
    fields = [f.attname for f in SearchDocument._meta.concrete_fields]
    return [
        tuple(map(str, row)) for row in SearchDocument.objects.order_by("pk").values_list(*fields)
    ]


def test_what_an_import_indexes_from_memory_is_what_the_database_reads_back(
    sample: None,
) -> None:
    # A new iteration is indexed from the runs the import holds; a rebuild reads them back.
    as_imported = documents()

    call_command("searchindex", stdout=StringIO())

    assert documents() == as_imported and len(as_imported) == Run.objects.count()


@pytest.mark.django_db
def test_re_import_keeps_the_index_exact(tmp_path: Path) -> None:
    cells = {
        ("alpha", "with_skill"): [{"a1": True}],
        ("alpha", "without_skill"): [{"a1": False}],
        ("beta", "with_skill"): [{"a1": True}],
    }
    folder = eval_magic_iteration(tmp_path, cells=cells)
    set_final_message(folder, "alpha", "with_skill", "The zebra crossed first.")
    set_final_message(folder, "beta", "with_skill", "A walrus appeared.")
    import_workspace([tmp_path])
    assert found("zebra") == ["1:alpha/with_skill/1"] and found("walrus") == ["1:beta/with_skill/1"]

    set_final_message(folder, "alpha", "with_skill", "The giraffe crossed first.")

    shutil.rmtree(folder / "eval-beta")
    import_workspace([tmp_path])

    assert found("zebra") == [] and found("giraffe") == ["1:alpha/with_skill/1"]
    assert found("walrus") == []  # the run the source no longer has is gone from the index
    assert SearchDocument.objects.count() == Run.objects.count() == 2


@pytest.mark.django_db
def test_a_rejected_import_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)
    set_final_message(folder, "alpha", "with_skill", "The zebra crossed first.")
    import_workspace([tmp_path])
    set_final_message(folder, "alpha", "with_skill", "The giraffe crossed first.")
    (folder / "eval-alpha" / "without_skill" / "grading.json").write_text("{not json")

    with pytest.raises(Exception):  # noqa: B017 (the importer's one-line error; tested elsewhere)
        import_workspace([tmp_path])

    assert found("zebra") == ["1:alpha/with_skill/1"] and found("giraffe") == []


@pytest.mark.django_db
def test_notes_and_overrides_are_searchable_at_once(tmp_path: Path) -> None:
    import_workspace([eval_magic_iteration(tmp_path)])
    reviewer = get_user_model().objects.create_user("rev")
    run = Run.objects.get(condition__name="without_skill")
    add_note(run=run, author=reviewer, text="The judge missed the okapi.")

    assert found("okapi") == ["1:alpha/without_skill/1"]
    assert found("alpha", outcome="fail") == ["1:alpha/without_skill/1"]

    failed = AssertionResult.objects.get(grading__run=run, passed=False, is_meta=False)
    override(result=failed, author=reviewer, passed=True, reason="the pangolin was there")

    assert found("pangolin") == ["1:alpha/without_skill/1"]
    assert "1:alpha/without_skill/1" in found("alpha", outcome="pass")


def test_admin_edits_are_searchable_at_once(sample: None) -> None:
    admin = Client()
    admin.force_login(get_user_model().objects.create_superuser("boss", password="not used"))
    run = Run.objects.select_related("eval_case", "condition", "iteration").order_by("pk").first()
    where = f"{run.iteration.number}:{run.eval_id}/{{}}/{run.run_index}"
    in_skill = {"skill_id": run.iteration.skill_id}

    admin_save(admin, run, final_message="An aardvark wrote this in the admin.", prompt="")
    assert found("aardvark", **in_skill) == [where.format(run.condition.name)]

    admin_save(admin, run.eval_case, prompt="Ask the quokka first.")  # now the run's prompt
    assert where.format(run.condition.name) in found("quokka", **in_skill)

    form = ChangeForm()
    form.feed(admin.get(f"/admin/runs/iteration/{run.iteration_id}/change/").content.decode())
    row = next(k for k, v in form.data.items() if k.endswith("-id") and v == str(run.condition_id))
    admin_save(admin, run.iteration, **{row.removesuffix("-id") + "-name": "renamed_in_admin"})
    assert found("aardvark", condition="renamed_in_admin", **in_skill) == [
        where.format("renamed_in_admin")
    ]


@pytest.mark.django_db
def test_deleting_an_iteration_takes_its_runs_out_of_the_index(sample: None) -> None:
    Iteration.objects.filter(skill__name="taming-flaky-tests").delete()

    assert found("timezone") == []
    assert SearchDocument.objects.count() == Run.objects.count()


# The pages and the API --------------------------------------------------------------------


def test_the_search_page_keeps_the_query_in_the_address(client: Client, sample: None) -> None:
    html = client.get("/skills/taming-flaky-tests/search/", {"q": f'"{SAMPLE_PHRASE}"'}).content
    html = html.decode()

    assert 'value="&quot;the title carried the machine&#x27;s local date&quot;"' in html
    assert "timezone-boundary-flake" in html and "<mark>" in html
    assert 'href="/skills/taming-flaky-tests/iterations/' in html


def test_the_search_page_says_what_is_wrong_with_a_query(client: Client, sample: None) -> None:
    response = client.get("/search/", {"q": '"*"'})

    assert response.status_code == 200
    assert "has no word to search for" in response.content.decode()


def test_htmx_gets_the_results_alone(client: Client, sample: None) -> None:
    html = client.get("/search/", {"q": "timezone"}, HTTP_HX_REQUEST="true").content.decode()

    assert html.lstrip().startswith('<section id="results">')


def test_a_search_needs_an_account(sample: None) -> None:
    response = Client().get("/search/", {"q": "timezone"})

    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_hostile_text_in_results_is_escaped(client: Client, tmp_path: Path) -> None:
    import_workspace([hostile_workspace(tmp_path)])

    html = client.get("/search/", {"q": "unique hostile marker"}).content.decode()

    assert "hostile-skill" in html and "<mark>" in html
    assert unsafe_markup(html) == []


def test_the_api_searches_a_skill_paginated(client: Client, sample: None) -> None:
    url = "/api/skills/taming-flaky-tests/search"
    first = client.get(url, {"q": "timezone", "limit": 2}).json()
    second = client.get(url, {"q": "timezone", "limit": 2, "offset": 2}).json()

    assert first["count"] == second["count"] > 2
    assert len(first["items"]) == len(second["items"]) == 2
    assert {i["url"] for i in first["items"]}.isdisjoint(i["url"] for i in second["items"])
    assert first["items"][0]["skill"] == "taming-flaky-tests"


def test_the_api_searches_every_skill_and_refuses_a_bad_query(client: Client, sample) -> None:
    everything = client.get("/api/search", {"q": "changelog OR timezone"}).json()
    refused = client.get("/api/search", {"q": "-only"})

    assert everything["count"] >= 0
    assert refused.status_code == 400 and "leave out" in refused.json()["detail"]
    assert client.get("/api/skills/nope/search", {"q": "x"}).status_code == 404
    assert Client().get("/api/search", {"q": "x"}).status_code == 401


def test_pages_of_results_link_to_each_other(client: Client, sample: None) -> None:
    first = client.get("/search/", {"q": "the"}).content.decode()
    second = client.get("/search/", {"q": "the", "page": 2}).content.decode()

    assert 'href="?q=the&amp;page=2"' in first and "previous" not in first
    assert 'href="?q=the&amp;page=1"' in second
    # Twenty runs a page, whether each is a result or grouped with its neighbours; none twice.
    on_first, on_second = run_links(first), run_links(second)
    assert len(on_first) == 20 == len(set(on_first)) and not set(on_first) & set(on_second)


@pytest.mark.django_db
def test_searchindex_rebuilds_an_index_that_lost_its_documents(sample: None) -> None:
    SearchDocument.objects.all().delete()
    assert found("timezone") == []
    out = StringIO()

    call_command("searchindex", stdout=out)

    assert out.getvalue().strip() == f"search index rebuilt: {Run.objects.count()} runs"
    assert found("timezone") and SearchDocument.objects.count() == Run.objects.count()


@pytest.mark.django_db
def test_a_run_without_conversation_json_is_searched_by_its_tool_calls(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)
    (folder / "eval-alpha" / "with_skill" / "conversation.json").unlink()
    import_workspace([tmp_path])

    # run.json's tool_invocations: Read {"file_path": "README.md"}, ordinal 1.
    hits = search(parse_query('"README md"'), Filters()).hits

    with_skill = [h for h in hits if h.run.condition.name == "with_skill"]
    assert len(with_skill) == 1 and with_skill[0].url.endswith("#event-1")


@pytest.mark.django_db
def test_text_a_tool_call_wrote_is_searched_by_its_words_not_its_json_escapes(
    tmp_path: Path,
) -> None:
    folder = eval_magic_iteration(tmp_path)
    path = folder / "eval-alpha" / "with_skill" / "conversation.json"
    record = json.loads(path.read_text())
    record["events"][1].update(name="Write", args={"content": 'def main():\n\treturn "okapi"'})
    write_json(path, record)
    import_workspace([tmp_path])

    hits = search(parse_query('"main return okapi"'), Filters()).hits

    assert [h.url.rsplit("#", 1)[1] for h in hits] == ["event-1"]


def test_hits_found_in_conversations_cost_the_same_queries_however_many(sample: None) -> None:
    query = parse_query("launching")  # "Launching skill: …", a tool result in transcripts
    with CaptureQueriesContext(connection) as few:
        hits = search(query, Filters(), limit=2).hits
    with CaptureQueriesContext(connection) as many:
        more = search(query, Filters(), limit=20).hits

    assert len(hits) == 2 and len(more) > 2
    assert all(h.event is not None for h in more)
    assert len(many.captured_queries) == len(few.captured_queries)
