"""CI output: the pull-request summary and the JUnit file, by the module, the commands and
the API, on two iterations whose changes are counted by hand."""

from __future__ import annotations

import io
import re
import tarfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import Client
from junitparser import Error, Failure, JUnitXml, Skipped
from markdown_it import MarkdownIt

from accounts.sharing import share_view
from runs.api.schemas import ImportedIterationOut
from runs.importing import import_workspace
from runs.models import Iteration
from runs.reporting import iteration_outcomes, junit_xml, marker, summary_markdown
from tests.factories import eval_magic_iteration, write_json

pytestmark = pytest.mark.django_db

SKILL = "demo-skill"
PASS, FAIL = {"a1": True}, {"a1": False}
#: An eval id an agent could write: a link, raw HTML, a mention, backticks, a pipe.
HOSTILE_ID = "[x](javascript:alert(1))<img src=x onerror=alert(2)>@octocat`|`"


def cells(**by_eval: tuple[list, list]) -> dict:
    return {
        (eval_id, condition): runs
        for eval_id, (with_skill, without_skill) in by_eval.items()
        for condition, runs in (("with_skill", with_skill), ("without_skill", without_skill))
    }


def two_iterations(root: Path) -> None:
    """#1 then #2: alpha regresses (1.00 → 0.00), gamma improves (0.00 → 1.00), beta holds;
    in #2, one of beta's without_skill runs errored."""
    eval_magic_iteration(
        root,
        label="iteration-1",
        cells=cells(
            alpha=([PASS] * 5, [FAIL] * 5),
            beta=([PASS] * 5, [PASS] * 5),
            gamma=([FAIL] * 5, [FAIL] * 5),
        ),
    )
    second = eval_magic_iteration(
        root,
        label="iteration-2",
        timestamp="2026-05-02T10:00:00Z",
        cells=cells(
            alpha=([FAIL] * 5, [FAIL] * 5),
            beta=([PASS] * 5, [PASS] * 5),
            gamma=([PASS] * 5, [FAIL] * 5),
        ),
    )
    run = second / "eval-beta" / "without_skill" / "run-5"
    (run / "grading.json").unlink()
    write_json(run / "error.json", {"error": "API overloaded after 6 retries <&>"})


@pytest.fixture
def imported(tmp_path: Path) -> Iteration:
    two_iterations(tmp_path)
    import_workspace([tmp_path])
    return Iteration.objects.get(skill__name=SKILL, label="iteration-2")


def test_the_summary_names_the_verdict_delta_changes_and_links(imported: Iteration) -> None:
    (outcome,) = iteration_outcomes([imported])

    text = summary_markdown([outcome], base_url="https://evals.example.com/")

    first, *rest = text.splitlines()
    assert first == f"<!-- evalsite-summary skill={SKILL} -->"
    body = "\n".join(rest)
    # with − without: alpha 0, beta 0, gamma +1 → +0.33 over 3 evals, interval spanning 0.
    assert "**Verdict:** difference not distinguishable from noise (+0.33" in body
    assert "**Delta (treatment − control):** +0.33 (95% CI −" in body
    assert "**Since iteration 1:** 1 improved, 1 regressed" in body
    assert "Regressed:\n- `alpha`: 1.00 → 0.00" in body
    assert "Improved:\n- `gamma`: 0.00 → 1.00" in body
    assert "30 runs (1 errored) over 3 evals." in body
    assert (
        f"[Iteration {imported.number}](https://evals.example.com/skills/{SKILL}/iterations/"
        in body
    )
    assert (
        f"[Compare with iteration 1](https://evals.example.com/skills/{SKILL}/compare/?a=1&b={imported.number})"
        in body
    )
    assert "share link" not in body
    assert not re.search(r"#\d", body)  # GitHub would link "#1" to issue 1


def test_the_first_iteration_says_there_is_nothing_before_it(imported: Iteration) -> None:
    first = Iteration.objects.get(skill__name=SKILL, label="iteration-1")

    text = summary_markdown(iteration_outcomes([first]))

    assert "**Since the previous iteration:** none, this is the skill's first." in text
    assert "Compare with" not in text
    assert f"(/skills/{SKILL}/iterations/1/)" in text  # no site address: the paths


def test_the_marker_stays_the_same_from_push_to_push(tmp_path: Path, imported: Iteration) -> None:
    before = summary_markdown(iteration_outcomes([imported])).splitlines()[0]
    eval_magic_iteration(tmp_path / "more", label="iteration-3", timestamp="2026-05-03T10:00:00Z")
    import_workspace([tmp_path / "more"])
    third = Iteration.objects.get(skill__name=SKILL, label="iteration-3")

    after = summary_markdown(iteration_outcomes([third])).splitlines()[0]

    assert before == after == marker([SKILL])
    # A name that could close the comment is percent-encoded, and the order is fixed.
    assert marker(["b-->x", "a"]) == "<!-- evalsite-summary skill=a,b--%3Ex -->"


def test_a_delta_without_an_interval_says_why(tmp_path: Path) -> None:
    eval_magic_iteration(tmp_path)  # one eval
    import_workspace([tmp_path])

    text = summary_markdown(iteration_outcomes([Iteration.objects.get()]))

    assert "**Delta (treatment − control):** +0.50, no interval: 1 eval in both, at least 2" in text


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))


def test_hostile_eval_names_cannot_add_links_html_or_mentions(tmp_path: Path) -> None:
    # Five passing runs, then five failing: the eval's fall is a badge, so it is listed.
    eval_magic_iteration(
        tmp_path,
        cells={(HOSTILE_ID, "with_skill"): [PASS] * 5, (HOSTILE_ID, "without_skill"): [PASS]},
    )
    eval_magic_iteration(
        tmp_path,
        label="iteration-2",
        timestamp="2026-05-02T10:00:00Z",
        cells={(HOSTILE_ID, "with_skill"): [FAIL] * 5, (HOSTILE_ID, "without_skill"): [FAIL]},
    )
    import_workspace([tmp_path])
    latest = Iteration.objects.get(label="iteration-2")

    text = summary_markdown(iteration_outcomes([latest]), base_url="https://evals.example.com")

    assert HOSTILE_ID in text  # shown as written, in a code span
    rendered = _Tags()
    rendered.feed(MarkdownIt("commonmark").render(text))
    assert {tag for tag, _ in rendered.tags} <= {"h3", "p", "strong", "code", "ul", "li", "a"}
    hrefs = [attrs["href"] for tag, attrs in rendered.tags if tag == "a"]
    assert hrefs and all(h.startswith("https://evals.example.com/skills/") for h in hrefs)
    # Outside code spans nothing is left of it: no "@octocat" for GitHub to mention.
    assert "@octocat" not in re.sub(r"(`+) .*? \1|(`+)[^`]*?\2", "", text)


def test_the_junit_file_has_a_case_per_eval_and_condition(imported: Iteration) -> None:
    xml = JUnitXml.fromstring(junit_xml(iteration_outcomes([imported])))

    (suite,) = list(xml)
    cases = {case.name: case for case in suite}
    assert sorted(cases) == [
        f"{e} ({c})" for e in ("alpha", "beta", "gamma") for c in ("with_skill", "without_skill")
    ]
    assert {case.classname for case in cases.values()} == {f"{SKILL}/#{imported.number}"}
    # By hand: alpha's two cases and gamma without the skill failed a1; beta without errored.
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (6, 3, 1, 0)
    assert (xml.tests, xml.failures, xml.errors) == (6, 3, 1)
    failure = cases["alpha (with_skill)"].result
    assert len(failure) == 1 and isinstance(failure[0], Failure)
    assert failure[0].message == (
        "regressed since #1: 1.00 → 0.00; assertions failed: a1 (5 of 5 runs)"
    )
    assert cases["alpha (without_skill)"].result[0].message == "assertions failed: a1 (5 of 5 runs)"
    error = cases["beta (without_skill)"].result
    assert isinstance(error[0], Error)
    assert error[0].message == "run 5: API overloaded after 6 retries <&>"
    assert cases["gamma (with_skill)"].is_passed and cases["beta (with_skill)"].is_passed


def test_a_cell_without_gradings_is_skipped(tmp_path: Path) -> None:
    eval_magic_iteration(
        tmp_path, cells={("alpha", "with_skill"): [None], ("alpha", "without_skill"): [PASS]}
    )
    import_workspace([tmp_path])

    xml = JUnitXml.fromstring(junit_xml(iteration_outcomes([Iteration.objects.get()])))

    (suite,) = list(xml)
    skipped = {case.name: case for case in suite}["alpha (with_skill)"]
    assert isinstance(skipped.result[0], Skipped)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (2, 0, 0, 1)


def test_hostile_names_stay_text_in_the_junit_file(tmp_path: Path) -> None:
    eval_magic_iteration(
        tmp_path, cells={(HOSTILE_ID, "with_skill"): [FAIL], (HOSTILE_ID, "without_skill"): [PASS]}
    )
    import_workspace([tmp_path])

    xml = JUnitXml.fromstring(junit_xml(iteration_outcomes([Iteration.objects.get()])))

    names = sorted(case.name for suite in xml for case in suite)
    assert names == [f"{HOSTILE_ID} (with_skill)", f"{HOSTILE_ID} (without_skill)"]


# The commands --------------------------------------------------------------------------


def test_importworkspace_writes_the_summary_and_junit_of_what_it_imported(
    tmp_path: Path, settings
) -> None:
    settings.EVALSITE_SITE_URL = "https://evals.example.com"
    two_iterations(tmp_path / "ws")
    out = io.StringIO()

    call_command(
        "importworkspace",
        str(tmp_path / "ws"),
        "--summary",
        str(tmp_path / "summary.md"),
        "--junit",
        str(tmp_path / "junit.xml"),
        stdout=out,
    )

    text = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert text.splitlines()[0] == marker([SKILL])
    assert text.count("### evalsite:") == 2  # both iterations were created
    assert "(https://evals.example.com/skills/demo-skill/compare/?a=1&b=2)" in text
    xml = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    assert [suite.tests for suite in xml] == [6, 6]
    # #1: alpha without, gamma with and without failed a1; #2 as counted above.
    assert (xml.failures, xml.errors) == (3 + 3, 1)

    # Imported again, unchanged: nothing written, so nothing reported.
    call_command("importworkspace", str(tmp_path / "ws"), "--summary", "-", "-v", "0", stdout=out)
    assert out.getvalue().endswith("Nothing was imported, so there is nothing to report.\n")


def test_importworkspace_makes_share_links_when_asked(tmp_path: Path, user) -> None:
    two_iterations(tmp_path / "ws")
    out = io.StringIO()

    call_command(
        "importworkspace",
        str(tmp_path / "ws"),
        "-v",
        "0",
        "--summary",
        "-",
        "--share-as",
        user.username,
        stdout=out,
    )

    tokens = re.findall(r"\[Read-only share link\]\(/s/([\w-]+)/\)", out.getvalue())
    assert len(tokens) == 2
    client = Client()
    assert client.get(f"/s/{tokens[1]}/").status_code == 302
    assert client.get("/skills/demo-skill/iterations/2/").status_code == 200


def test_share_as_needs_a_summary_and_a_real_user(tmp_path: Path, user) -> None:
    two_iterations(tmp_path / "ws")
    with pytest.raises(CommandError, match="--share-as: only with --summary"):
        call_command("importworkspace", str(tmp_path / "ws"), "--share-as", user.username)
    with pytest.raises(CommandError, match="--share-as: no active user named 'nobody'"):
        call_command(
            "importworkspace", str(tmp_path / "ws"), "--summary", "-", "--share-as", "nobody"
        )
    assert not Iteration.objects.exists()  # refused before importing


def test_an_unwritable_file_is_a_one_line_error(tmp_path: Path) -> None:
    two_iterations(tmp_path / "ws")
    with pytest.raises(CommandError) as info:
        call_command(
            "importworkspace",
            str(tmp_path / "ws"),
            "--junit",
            str(tmp_path / "no" / "j.xml"),
            stdout=io.StringIO(),
        )
    assert (
        str(info.value) == f"{tmp_path / 'no' / 'j.xml'}: cannot write (No such file or directory)"
    )


# The API -------------------------------------------------------------------------------


def test_the_api_serves_both_files_with_the_requests_host(api: Client, imported: Iteration) -> None:
    base = f"/api/skills/{SKILL}/iterations/{imported.number}"

    summary = api.get(f"{base}/summary.md")
    junit = api.get(f"{base}/junit.xml")

    assert summary["Content-Type"] == "text/markdown; charset=utf-8"
    text = summary.content.decode()
    assert text == summary_markdown(iteration_outcomes([imported]), base_url="http://testserver")
    assert junit["Content-Type"] == "application/xml; charset=utf-8"
    assert JUnitXml.fromstring(junit.content).failures == 3
    assert api.get(f"/api/skills/{SKILL}/iterations/99/summary.md").status_code == 404


def test_the_summary_links_a_share_link_given_by_its_token(
    api: Client, user, imported: Iteration
) -> None:
    base = f"/api/skills/{SKILL}/iterations/{imported.number}/summary.md"
    skill_link = share_view(creator=user, address=f"/skills/{SKILL}/")
    other = share_view(creator=user, address=f"/skills/{SKILL}/iterations/1/")

    text = api.get(f"{base}?share={skill_link.secret}").content.decode()

    assert (
        f"[Read-only share link](http://testserver/s/{skill_link.secret}/"
        f"?to=%2Fskills%2Fdemo-skill%2Fiterations%2F{imported.number}%2F)"
    ) in text
    refused = api.get(f"{base}?share={other.secret}")
    assert refused.status_code == 400
    assert "not an active share link to this iteration" in refused.json()["detail"]
    skill_link.link.revoke()
    assert api.get(f"{base}?share={skill_link.secret}").status_code == 400


def test_the_files_are_read_like_the_other_endpoints(user, imported: Iteration, settings) -> None:
    url = f"/api/skills/{SKILL}/iterations/{imported.number}/junit.xml"
    anonymous = Client()
    assert anonymous.get(url).status_code == 401
    # A share link opens pages, never the API.
    link = share_view(creator=user, address=f"/skills/{SKILL}/")
    anonymous.get(f"/s/{link.secret}/")
    assert anonymous.get(url).status_code == 401
    settings.EVALSITE_PUBLIC_READ = True
    assert anonymous.get(url).status_code == 200


def test_an_import_through_the_api_lists_the_files_of_what_it_wrote(
    api: Client, tmp_path: Path
) -> None:
    two_iterations(tmp_path / "ws")
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        tar.add(tmp_path / "ws", arcname="ws")
    archive.seek(0)
    archive.name = "ws.tar.gz"

    body = api.post("/api/imports", {"archive": archive}).json()

    assert [(i["number"], i["label"]) for i in body["iterations"]] == [
        (1, "iteration-1"),
        (2, "iteration-2"),
    ]
    second = body["iterations"][1]
    assert second["summary_url"] == f"/api/skills/{SKILL}/iterations/2/summary.md"
    assert api.get(second["junit_url"]).status_code == 200


# The documented workflow -----------------------------------------------------------------

WORKFLOW = Path(__file__).resolve().parents[2] / "docs" / "evalsite-pr.yml"


def test_the_documented_workflow_is_advisory_and_reads_what_the_api_answers() -> None:
    job = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["evals"]
    steps = {step.get("id") or step.get("name") or step["uses"]: step for step in job["steps"]}

    assert steps["evals"]["continue-on-error"] == "${{ vars.EVALSITE_BLOCKING != 'true' }}"
    assert "--fail-on-regression" in steps["evals"]["run"]
    upload = steps["upload"]["run"]
    fields = set(re.findall(r"\.iterations\[-1\]\.(\w+)", upload))
    assert fields == {"summary_url", "junit_url"} <= set(ImportedIterationOut.model_fields)
    comment = steps["Post or update the pull request's evalsite comment"]["run"]
    assert "head -n 1 summary.md" in comment and "startswith(env.MARKER)" in comment


def test_the_files_cost_the_same_queries_for_3_evals_as_for_30(tmp_path: Path, api: Client) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries(skill: str, evals: int) -> int:
        many = {f"e{i}": ([PASS, FAIL], [FAIL, FAIL]) for i in range(evals)}
        for label, stamp in (
            ("iteration-1", "2026-05-01T10:00:00Z"),
            ("iteration-2", "2026-05-02T10:00:00Z"),
        ):
            eval_magic_iteration(
                tmp_path / skill, skill=skill, label=label, timestamp=stamp, cells=cells(**many)
            )
        import_workspace([tmp_path / skill])
        api.get("/api/skills")  # the token's last use is recorded once a minute: now
        with CaptureQueriesContext(connection) as captured:
            for name in ("summary.md", "junit.xml"):
                assert api.get(f"/api/skills/{skill}/iterations/2/{name}").status_code == 200
        return len(captured)

    assert queries("few", 3) == queries("many", 30)
