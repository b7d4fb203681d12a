"""Downloads (CSV and JSON) of the matrix, an iteration's runs, an eval's table and the trend:
their figures counted by hand, the pages' filters, share scope, spreadsheet-safe cells, the
API, and a fixed number of queries."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.sharing import share_view
from bench.generate import generate_workspace, skill_names
from runs.exporting import Table, csv_cell, csv_lines, download_name, json_document
from runs.importing import import_workspace
from runs.models import Iteration, Run, Skill
from runs.reading.iteration import MATRIX_PAGE_ROWS
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db

T, C = "with_skill", "without_skill"
SKILL = "export-me"
OTHER = "someone-else"
PASS2, HALF, FAIL2 = {"a1": True, "a2": True}, {"a1": True, "a2": False}, {"a1": False, "a2": False}


def write(root: Path, skill: str, n: int, cells: dict) -> None:
    eval_magic_iteration(
        root / f"{skill}-{n}",
        skill=skill,
        label=f"iteration-{n}",
        timestamp=f"2026-05-0{n}T10:00:00Z",
        cells=cells,
    )
    import_workspace([root / f"{skill}-{n}"])


@pytest.fixture
def data(tmp_path: Path) -> None:
    """Two iterations of SKILL, and one of OTHER.

    Iteration 2: alpha T 0.75 (runs 1.0, 0.5), C 0.5; beta T 0, C 1; "=1+2" T 1, C not
    graded; "10" T 1, C 1. Iteration 1's treatment: alpha 0.5, beta 1 (so alpha improved,
    beta regressed, the other two are new).
    """
    write(tmp_path, SKILL, 1, {("alpha", T): [HALF], ("alpha", C): [FAIL2]}
          | {("beta", T): [PASS2], ("beta", C): [HALF]})  # fmt: skip
    write(
        tmp_path,
        SKILL,
        2,
        {
            ("alpha", T): [PASS2, HALF],
            ("alpha", C): [HALF],
            ("beta", T): [FAIL2],
            ("beta", C): [PASS2],
            ("=1+2", T): [PASS2],
            ("=1+2", C): [None],
            ("10", T): [PASS2],
            ("10", C): [PASS2],
        },
    )
    write(tmp_path, OTHER, 1, {("alpha", T): [PASS2], ("alpha", C): [HALF]})


def url(
    name: str, fmt: str = "csv", *, skill: str = SKILL, number: int = 2, eval_id: str = ""
) -> str:
    kwargs: dict[str, object] = {"skill": skill, "fmt": fmt}
    if name != "trend_export":
        kwargs["number"] = number
    if eval_id:
        kwargs["eval_id"] = eval_id
    return reverse(f"runs:{name}", kwargs=kwargs)


def body(response) -> str:
    assert response.status_code == 200, response.status_code
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode("utf-8")


def read_csv(client: Client, address: str) -> list[dict[str, str]]:
    response = client.get(address)
    text = body(response)
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert text.startswith("\ufeff")  # so Excel reads it as UTF-8
    return list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))


def column(rows: list[dict[str, str]], name: str) -> list[str]:
    return [row[name] for row in rows]


def test_the_matrix_holds_each_evals_scores_counted_by_hand(client, data) -> None:
    rows = read_csv(client, url("matrix_export"))
    # The matrix's natural order; the formula-like id made inert.
    assert column(rows, "eval_id") == ["10", "'=1+2", "alpha", "beta"]
    alpha = rows[2]
    assert alpha[f"{T} score"] == "0.75" and alpha[f"{T} graded"] == "2"
    assert alpha[f"{C} score"] == "0.5" and alpha[f"{C} runs"] == "1"
    assert (alpha["delta"], alpha["previous_treatment_score"]) == ("0.25", "0.5")
    assert (alpha["change"], alpha["movement"]) == ("0.25", "improved")
    beta = rows[3]
    # A negative number stays a number: only text is neutralised.
    assert (beta["delta"], beta["change"], beta["movement"]) == ("-1.0", "-1.0", "regressed")
    formula = rows[1]
    assert formula[f"{C} score"] == "" and formula[f"{C} graded"] == "0"
    assert formula[f"{C} runs"] == "1" and formula["movement"] == "new"


def test_the_matrix_keeps_the_pages_filters_and_order(client, data) -> None:
    ids = lambda query: column(read_csv(client, url("matrix_export") + query), "eval_id")  # noqa: E731
    assert ids("?change=improved") == ["alpha"]
    assert ids("?change=new") == ["10", "'=1+2"]
    assert ids("?only=failures") == ["alpha", "beta"]
    # Δ descending; the eval without one (its control ungraded) last, as on the page.
    assert ids("?sort=-delta") == ["alpha", "10", "beta", "'=1+2"]
    assert ids(f"?sort=score:{C}&page=2&rows=") == ["alpha", "10", "beta", "'=1+2"]
    assert ids("?sort=nonsense&change=bogus") == ["10", "'=1+2", "alpha", "beta"]


def test_the_matrix_exports_every_row_not_one_page(client, tmp_path) -> None:
    evals = MATRIX_PAGE_ROWS + 5
    write(tmp_path, "wide", 1, {(f"e{i}", T): [PASS2] for i in range(evals)})
    rows = read_csv(client, url("matrix_export", skill="wide", number=1) + "?page=1")
    assert column(rows, "eval_id") == [f"e{i}" for i in range(evals)]


def test_the_runs_are_one_row_each_counted_by_hand(client, data) -> None:
    rows = read_csv(client, url("runs_export"))
    assert [(r["eval_id"], r["condition"], r["run"]) for r in rows] == [
        ("10", T, "1"),
        ("10", C, "1"),
        ("'=1+2", T, "1"),
        ("'=1+2", C, "1"),
        ("alpha", T, "1"),
        ("alpha", T, "2"),
        ("alpha", C, "1"),
        ("beta", T, "1"),
        ("beta", C, "1"),
    ]
    second = rows[5]
    assert (second["status"], second["pass_rate"]) == ("completed", "0.5")
    assert (second["passed"], second["total"], second["skill_invoked"]) == ("1", "2", "true")
    assert (second["total_tokens"], second["duration_ms"]) == ("1002", "2000")
    ungraded = rows[3]
    assert (ungraded["pass_rate"], ungraded["passed"], ungraded["total"]) == ("", "", "")
    assert ungraded["skill_invoked"] == "false"  # no Skill call in its transcript


def test_the_runs_follow_the_matrix_filters_and_their_own(client, data) -> None:
    def runs(query: str) -> list[tuple[str, str, str]]:
        rows = read_csv(client, url("runs_export") + query)
        return [(r["eval_id"], r["condition"], r["run"]) for r in rows]

    assert runs("?change=improved") == [("alpha", T, "1"), ("alpha", T, "2"), ("alpha", C, "1")]
    assert runs(f"?eval_id=beta&condition={T}") == [("beta", T, "1")]
    assert runs("?sort=-delta&condition=" + C) == [
        ("alpha", C, "1"),
        ("10", C, "1"),
        ("beta", C, "1"),
        ("'=1+2", C, "1"),
    ]
    assert runs("?eval_id=no-such-eval") == []
    assert runs("?eval_id=" + "x" * 300) == []


def test_the_eval_table_is_per_condition_and_assertion(client, data) -> None:
    rows = read_csv(client, url("eval_export", eval_id="alpha"))
    assert [(r["condition"], r["assertion_id"], r["assertion_passed"], r["assertion_runs"])
            for r in rows] == [(T, "a1", "2", "2"), (T, "a2", "1", "2"),
                               (C, "a1", "1", "1"), (C, "a2", "0", "1")]  # fmt: skip
    treatment = rows[0]
    assert (treatment["role"], treatment["runs"], treatment["graded"]) == ("treatment", "2", "2")
    assert (treatment["runs_passing_all"], treatment["score"]) == ("1", "0.75")
    assert rows[2]["score"] == "0.5" and rows[2]["score_low"] == ""  # one run: no interval


def test_an_eval_graded_on_nothing_still_has_its_conditions_row(client, data) -> None:
    rows = read_csv(client, url("eval_export", eval_id="=1+2"))
    assert column(rows, "eval_id") == ["'=1+2", "'=1+2", "'=1+2"]
    assert [(r["condition"], r["assertion_id"]) for r in rows] == [(T, "a1"), (T, "a2"), (C, "")]
    assert rows[2]["graded"] == "0" and rows[2]["score"] == ""


def test_the_trend_is_a_row_per_iteration_and_condition(client, data) -> None:
    rows = read_csv(client, url("trend_export"))
    assert [(r["iteration"], r["condition"]) for r in rows] == [
        ("1", T), ("1", C), ("2", T), ("2", C)
    ]  # fmt: skip
    one_t, one_c, two_t, two_c = rows
    assert (one_t["score"], one_c["score"], one_t["delta"]) == ("0.75", "0.25", "0.5")
    # (1 + 0.75 + 0 + 1) / 4; the control (0.5 + 1 + 1) / 3; Δ over the 3 paired evals.
    assert (two_t["score"], two_c["score"]) == ("0.6875", str((0.5 + 1 + 1) / 3))
    assert (two_t["delta"], two_c["delta"], two_t["verdict"]) == ("-0.25", "-0.25", "noise")
    assert two_t["comparison_change"].startswith("#2: evals changed")
    assert one_t["comparison_change"] == ""
    assert (two_t["invocation"], two_t["mean_tokens"]) == ("1.0", "1001.2")
    assert two_t["generated_at"] == "2026-05-02T10:00:00+00:00"


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("matrix_export", {}),
        ("runs_export", {}),
        ("eval_export", {"eval_id": "=1+2"}),
        ("trend_export", {}),
    ],
)
def test_json_holds_what_the_csv_holds(client, data, name, kwargs) -> None:
    query = "?sort=-delta" if name == "matrix_export" else ""
    rows = read_csv(client, url(name, **kwargs) + query)
    document = json.loads(body(client.get(url(name, "json", **kwargs) + query)))
    assert rows and document["columns"] == list(rows[0])
    assert [{k: csv_cell(v) for k, v in row.items()} for row in document["rows"]] == rows
    if name != "trend_export":  # JSON keeps the agents' text as written, numbers as numbers
        assert "=1+2" in [row["eval_id"] for row in document["rows"]]


def test_a_download_is_an_attachment_with_a_safe_name(client, tmp_path) -> None:
    write(tmp_path, 'café "q";x', 1, {("alpha", T): [PASS2]})
    response = client.get(url("matrix_export", skill='café "q";x', number=1))
    assert response["Content-Disposition"] == 'attachment; filename="cafe-q-x-1-matrix.csv"'
    response = client.get(url("trend_export", "json", skill='café "q";x'))
    assert response["Content-Disposition"] == 'attachment; filename="cafe-q-x-trend.json"'
    assert response["Content-Type"] == "application/json"


def test_file_names_keep_only_safe_characters() -> None:
    assert download_name("café helper", 3, "matrix", extension="csv") == "cafe-helper-3-matrix.csv"
    assert download_name("../../etc/passwd", extension="csv") == "etc-passwd.csv"
    assert download_name("日本", extension="json") == "export.json"
    assert (
        download_name(".hidden", "=cmd|' /C calc'!A0", extension="csv")
        == "hidden-cmd-C-calc-A0.csv"
    )


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_text_a_spreadsheet_would_run_is_made_inert(start: str) -> None:
    assert csv_cell(f'{start}HYPERLINK("http://evil.example")').startswith(f"'{start}")
    header, row = csv_lines(Table("t", [f"{start}name"], [[f"{start}1+2"]]))
    assert list(csv.reader(io.StringIO(header.removeprefix("\ufeff")))) == [[f"'{start}name"]]
    assert list(csv.reader(io.StringIO(row))) == [[f"'{start}1+2"]]


def test_numbers_stay_numbers_and_empty_stays_empty() -> None:
    assert [csv_cell(v) for v in (-0.25, -3, 0, 1.0, True, False, None, float("nan"))] == [
        "-0.25", "-3", "0", "1.0", "true", "false", "", ""
    ]  # fmt: skip
    assert csv_cell("-3") == "'-3"  # text that looks like a number is still text
    assert csv_cell("a=b") == "a=b"  # only the first character matters
    assert json_document(Table("t", ["x"], [[float("inf")]])) == {
        "columns": ["x"],
        "rows": [{"x": None}],
    }


def test_text_with_commas_quotes_and_newlines_survives() -> None:
    (_, line) = csv_lines(Table("t", ["x"], [['a, "b"\nc']]))
    assert list(csv.reader(io.StringIO(line))) == [['a, "b"\nc']]


def test_each_page_links_its_downloads_with_its_filters(client, data) -> None:
    page = client.get(reverse("runs:iteration", args=[SKILL, 2]) + "?change=improved&page=1")
    html = page.content.decode()
    assert f'href="{url("matrix_export")}?change=improved" download>Download CSV</a>' in html
    assert f'href="{url("matrix_export", "json")}?change=improved" download>JSON</a>' in html
    assert f'href="{url("runs_export")}?change=improved"' in html
    assert "The filtered matrix (every page)" in html
    html = client.get(reverse("runs:iteration", args=[SKILL, 2])).content.decode()
    assert f'href="{url("matrix_export")}" download>Download CSV</a>' in html
    html = client.get(reverse("runs:skill", args=[SKILL])).content.decode()
    assert f'href="{url("trend_export")}" download>Download CSV</a>' in html
    html = client.get(reverse("runs:eval", args=[SKILL, 2, "alpha"])).content.decode()
    assert f'href="{url("eval_export", eval_id="alpha")}" download>Download CSV</a>' in html


def test_a_missing_eval_iteration_or_skill_is_404(client, data) -> None:
    assert client.get(url("eval_export", eval_id="no-such-eval")).status_code == 404
    assert client.get(url("matrix_export", number=9)).status_code == 404
    assert client.get(url("trend_export", skill="no-such-skill")).status_code == 404
    assert client.get(url("matrix_export").replace(".csv", ".xlsx")).status_code == 404


# Share scope: a download opens wherever its page does, and is refused as its page is.


def opened(user, address: str) -> Client:
    """A browser without an account that opened a share link to `address`."""
    visitor = Client()
    assert visitor.get(reverse("share", args=[share_view(creator=user, address=address).secret]))
    return visitor


def refused(response) -> bool:
    return response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_an_iteration_link_downloads_that_iteration_only(user, data) -> None:
    visitor = opened(user, reverse("runs:iteration", args=[SKILL, 2]) + "?change=improved")
    for address in (
        url("matrix_export"),
        url("runs_export", "json"),
        url("eval_export", eval_id="alpha"),
    ):
        assert visitor.get(address).status_code == 200, address
    assert column(read_csv(visitor, url("matrix_export") + "?only=failures"), "eval_id") == [
        "alpha",
        "beta",
    ]
    # Refused exactly as the pages beside them are: the skill's trend, another iteration,
    # another skill.
    for page, download in (
        (reverse("runs:skill", args=[SKILL]), url("trend_export")),
        (reverse("runs:iteration", args=[SKILL, 1]), url("matrix_export", number=1)),
        (reverse("runs:iteration", args=[SKILL, 1]), url("runs_export", number=1)),
        (reverse("runs:iteration", args=[OTHER, 1]), url("matrix_export", skill=OTHER, number=1)),
    ):
        assert refused(visitor.get(page)) and refused(visitor.get(download)), download


def test_a_skill_link_downloads_within_its_skill(user, data) -> None:
    visitor = opened(user, reverse("runs:skill", args=[SKILL]))
    for address in (url("trend_export"), url("matrix_export", number=1), url("runs_export"),
                    url("eval_export", "json", eval_id="beta")):  # fmt: skip
        assert visitor.get(address).status_code == 200, address
    assert refused(visitor.get(url("trend_export", skill=OTHER)))
    assert refused(visitor.get(url("matrix_export", skill=OTHER, number=1)))


def test_an_eval_link_downloads_that_evals_table_only(user, data) -> None:
    visitor = opened(user, reverse("runs:eval", args=[SKILL, 2, "alpha"]))
    assert visitor.get(url("eval_export", eval_id="alpha")).status_code == 200
    assert refused(visitor.get(url("eval_export", eval_id="beta")))
    assert refused(visitor.get(url("matrix_export")))
    assert refused(visitor.get(url("runs_export")))


def test_a_shared_page_links_only_downloads_its_link_opens(user, data) -> None:
    visitor = opened(user, reverse("runs:eval", args=[SKILL, 2, "alpha"]))
    html = visitor.get(reverse("runs:eval", args=[SKILL, 2, "alpha"])).content.decode()
    assert f'href="{url("eval_export", eval_id="alpha")}"' in html


def test_a_visitor_without_a_link_or_account_gets_nothing(data) -> None:
    for address in (url("matrix_export"), url("trend_export"), "/api" + url("trend_export")):
        response = Client().get(address)
        assert refused(response) or response.status_code == 401, address


# The API: the same tables, for a token.


def api_url(name: str, fmt: str = "csv", **kwargs: object) -> str:
    return "/api" + url(name, fmt, **kwargs)


@pytest.mark.parametrize(
    ("name", "kwargs", "query"),
    [
        ("matrix_export", {}, "?change=regressed&sort=-delta"),
        ("runs_export", {}, f"?only=failures&condition={T}"),
        ("eval_export", {"eval_id": "alpha"}, ""),
        ("trend_export", {}, ""),
    ],
)
def test_the_api_serves_the_pages_downloads(client, api, data, name, kwargs, query) -> None:
    for fmt in ("csv", "json"):
        page = body(client.get(url(name, fmt, **kwargs) + query))
        assert body(api.get(api_url(name, fmt, **kwargs) + query)) == page
    assert Client().get(api_url(name, **kwargs)).status_code == 401


def test_the_api_says_what_is_wrong_with_a_query(api, data) -> None:
    assert api.get(api_url("matrix_export") + "?change=sideways").status_code == 422
    assert api.get(api_url("eval_export", eval_id="nope")).json()["detail"].endswith("“nope”.")
    assert api.get(api_url("matrix_export", number=9)).status_code == 404
    # A repeated key keeps both filters: failures alone keep alpha and beta, flaky too alpha.
    both = api_url("matrix_export") + "?only=failures&only=flaky"
    assert column(read_csv(api, both), "eval_id") == ["alpha"]


def test_a_share_link_opens_no_api_download(user, data) -> None:
    visitor = opened(user, reverse("runs:skill", args=[SKILL]))
    assert visitor.get(api_url("trend_export")).status_code == 401


# Queries: a fixed number whatever the size of the iteration.


def export_urls() -> dict[str, str]:
    skill = skill_names(1)[0]
    latest = Iteration.objects.filter(skill__name=skill).order_by("-number").first()
    run = Run.objects.filter(iteration=latest).first()
    matrix = url("matrix_export", skill=skill, number=latest.number)
    return {
        "matrix": matrix,
        "matrix-filtered": matrix + "?only=failures&change=improved&sort=-delta",
        "matrix-json": url("matrix_export", "json", skill=skill, number=latest.number),
        "runs": url("runs_export", skill=skill, number=latest.number),
        "runs-filtered": url("runs_export", skill=skill, number=latest.number) + "?sort=-delta",
        "eval": url("eval_export", skill=skill, number=latest.number, eval_id=run.eval_id),
        "trend": url("trend_export", skill=skill),
        "api-runs": api_url("runs_export", skill=skill, number=latest.number),
    }


def queries_per_export(client: Client) -> dict[str, int]:
    counts = {}
    for name, address in export_urls().items():
        with CaptureQueriesContext(connection) as captured:
            body(client.get(address))  # streamed to the end: no query hides in the rows
        counts[name] = len(captured)
    return counts


def test_downloads_ask_a_fixed_number_of_queries(client, tmp_path) -> None:
    client.get("/")  # the session's first queries
    small_data = {"iterations": 2, "evals": 3, "runs": 1, "assertions": 2}
    large_data = {"iterations": 20, "evals": 6, "runs": 2, "assertions": 4}
    for scale, name in ((small_data, "small"), (large_data, "large")):
        Skill.objects.all().delete()
        generate_workspace(tmp_path / name, skills=2, events=6, workers=1, **scale)
        import_workspace([tmp_path / name])
        if name == "small":
            small = queries_per_export(client)
        else:
            large = queries_per_export(client)
    assert large == small
