"""The JSON API: the same numbers as the pages, paginated lists, imports and their refusals."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from django.test import Client

from accounts.models import ApiToken
from runs.importing import import_workspace
from runs.models import AssertionResult, EvalCase, Grading, Iteration, Review, Run, Skill
from runs.reading.benchmark import eval_magic_benchmark
from runs.reading.summaries import summarise_iterations
from tests.factories import eval_magic_iteration, write_json

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SKILL = "taming-flaky-tests"


@pytest.fixture
def sample() -> None:
    import_workspace([ROOT / "runs" / "sample"])


def get(api: Client, url: str, status: int = 200):
    response = api.get(url)
    assert response.status_code == status, response.content[:400]
    return response.json()


def counts() -> tuple[int, ...]:
    return tuple(
        model.objects.count()
        for model in (Skill, Iteration, EvalCase, Run, Grading, AssertionResult, Review)
    )


def test_tokens_are_stored_hashed(api: Client) -> None:
    token = ApiToken.objects.get()
    secret = api.defaults["HTTP_AUTHORIZATION"].removeprefix("Bearer ")
    assert secret not in (token.digest, token.prefix) and len(token.digest) == 64
    assert ApiToken.objects.find(secret) == token


def test_skills_are_paginated(api: Client, sample) -> None:
    page = get(api, "/api/skills?limit=1")
    assert page["count"] == 2
    assert [s["name"] for s in page["items"]] == ["changelog-from-commits"]
    assert get(api, "/api/skills?limit=1&offset=1")["items"][0]["name"] == SKILL


def test_an_iteration_carries_the_pages_numbers_and_verdict(
    api: Client, client: Client, sample
) -> None:
    iteration = Iteration.objects.get(skill__name=SKILL, number=1)
    summary = summarise_iterations([iteration])[iteration.pk]

    body = get(api, f"/api/skills/{SKILL}/iterations/1")

    assert body["verdict"] == summary.verdict
    assert body["delta"]["mean"] == pytest.approx(summary.delta.mean)
    assert body["delta"]["interval"]["low"] == pytest.approx(summary.delta.interval.low)
    assert body["delta"]["signal"] == summary.delta.signal
    treatment = next(c for c in body["conditions"] if c["name"] == body["treatment"])
    assert treatment["score"]["mean"] == pytest.approx(summary.treatment.score.mean)
    page = client.get(f"/skills/{SKILL}/iterations/1/").content.decode()
    assert body["verdict"].split(" (")[0] in page


def test_trends_list_every_iteration_in_order(api: Client, sample) -> None:
    trend = get(api, f"/api/skills/{SKILL}/trends")
    assert [i["number"] for i in trend] == [1, 2, 3, 4]
    assert get(api, f"/api/skills/{SKILL}/iterations")["count"] == 4


def test_the_benchmark_is_eval_magics(api: Client, sample) -> None:
    iteration = Iteration.objects.get(skill__name=SKILL, number=2)
    body = get(api, f"/api/skills/{SKILL}/iterations/2/benchmark")
    assert body == eval_magic_benchmark(iteration)


def test_runs_come_with_gradings_and_one_run_with_its_conversation(api: Client, sample) -> None:
    runs = get(api, f"/api/skills/{SKILL}/iterations/1/runs?limit=500")
    assert (
        runs["count"]
        == Run.objects.filter(iteration__skill__name=SKILL, iteration__number=1).count()
    )
    first = runs["items"][0]
    assert "conversation" not in first
    assert first["grading"] is None or "results" in first["grading"]
    one = get(
        api,
        f"/api/skills/{SKILL}/iterations/1/runs/{first['eval_id']}/{first['condition']}/{first['run_index']}",
    )
    assert isinstance(one["conversation"], list)
    assert one["url"] == first["url"]
    filtered = get(api, f"/api/skills/{SKILL}/iterations/1/runs?eval_id={first['eval_id']}")
    assert {r["eval_id"] for r in filtered["items"]} == {first["eval_id"]}


def test_a_comparison_has_its_verdict_and_badges(api: Client, sample) -> None:
    body = get(api, f"/api/skills/{SKILL}/compare?a=3&b=4")
    assert (body["before"], body["after"]) == (3, 4)
    assert body["verdict"] == body["treatment_change_verdict"]["sentence"]
    assert all("eval_id" in e for e in body["evals"])


def test_a_comparison_returns_the_headline_with_its_reasons(api: Client, sample) -> None:
    # #3 is a new-skill iteration and #4 a revision: their deltas get no verdict.
    unlike = get(api, f"/api/skills/{SKILL}/compare?a=3&b=4")
    assert unlike["delta_change_verdict"]["change"] is None
    assert "measure different things" in unlike["delta_change_verdict"]["sentence"]
    assert unlike["differences"] == [
        {"setting": "mode", "before": "new-skill", "after": "revision"}
    ]
    # Every eval's treatment score is the same in both: no zero-width interval.
    treatment = unlike["treatment_change_verdict"]
    assert treatment["change"]["interval"] is None
    assert treatment["no_interval"] == "no spread between evals: no interval"

    like = get(api, f"/api/skills/{SKILL}/compare?a=2&b=3")
    delta = like["delta_change_verdict"]
    assert delta["no_interval"] == "" and delta["change"]["interval"]["low"] < 0
    assert delta["sentence"].startswith("difference not distinguishable from noise")
    assert like["differences"] == []
    conditions = get(api, f"/api/skills/{SKILL}/compare?a=3&b=3&ca=without_skill&cb=with_skill")
    assert conditions["delta_change_verdict"] is None


def test_missing_things_are_json_404s(api: Client, sample) -> None:
    assert get(api, "/api/skills/nope", 404)["detail"] == "No skill named “nope”."
    assert "no iteration #9" in get(api, f"/api/skills/{SKILL}/iterations/9", 404)["detail"]


def test_a_review_through_the_api_overrides_a_result(api: Client, tmp_path: Path) -> None:
    eval_magic_iteration(tmp_path)
    import_workspace([tmp_path])
    url = "/api/skills/demo-skill/iterations/1/runs/alpha/without_skill/1/reviews"

    response = api.post(
        url,
        {"text": "a2 is fine", "assertion_id": "a2", "passed": True},
        content_type="application/json",
    )

    assert response.status_code == 201, response.content
    assert response.json()["overridden_passed"] is True
    assert Grading.objects.get(run__condition__name="without_skill").pass_rate == 1.0
    missing = api.post(url, {"text": "x", "passed": True}, content_type="application/json")
    assert missing.status_code == 400
    assert missing.json()["detail"].startswith("passed:")


# --- imports --------------------------------------------------------------------------------


def zipped(folder: Path, target: Path) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder.parent).as_posix())
    return target


def upload(api: Client, path: Path, name: str | None = None):
    data = io.BytesIO(path.read_bytes())
    data.name = name or path.name
    return api.post("/api/imports", {"archive": data})


def test_ci_pushes_a_workspace_archive_and_pushing_again_is_safe(
    api: Client, tmp_path: Path
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws").parent
    archive = zipped(folder, tmp_path / "demo-skill.zip")

    first = upload(api, archive)
    again = upload(api, archive)

    assert first.status_code == 201, first.content
    assert first.json()["counts"]["runs"] == {"created": 2}
    assert again.json()["counts"]["runs"] == {"skipped": 2}
    assert Iteration.objects.filter(skill__name="demo-skill").count() == 1


def refused(api: Client, path: Path, status: int = 400, name: str | None = None) -> str:
    before = counts()
    response = upload(api, path, name)
    assert response.status_code == status, response.content
    assert counts() == before
    detail = response.json()["detail"]
    assert "\n" not in detail and "evalsite-upload-" not in detail
    return detail


def test_it_refuses_a_file_that_is_not_an_archive(api: Client, tmp_path: Path) -> None:
    text = tmp_path / "results.txt"
    text.write_text("hello")
    assert refused(api, text) == "results.txt: not a .zip or .tar.gz archive of a workspace"
    fake = tmp_path / "results.zip"
    fake.write_text("not a zip at all")
    assert refused(api, fake) == (
        "results.zip: not a folder or a .zip / .tar.gz archive of a workspace"
    )


def test_the_response_says_where_each_iteration_was_filed_and_why(
    api: Client, tmp_path: Path
) -> None:
    archive = zipped(eval_magic_iteration(tmp_path / "ws").parent, tmp_path / "demo-skill.zip")

    response = upload(api, archive)

    assert response.status_code == 201
    assert response.json()["placed"] == [
        {
            "skill": "demo-skill",
            "iteration": "iteration-1",
            "folder": "demo-skill.zip!/demo-skill/iteration-1",
            "why": "demo-skill/ holds it, as eval-magic lays out a skill's iterations",
        }
    ]


def test_it_refuses_an_oversized_upload(api: Client, tmp_path: Path, settings) -> None:
    settings.EVALSITE_UPLOAD_MAX_BYTES = 100
    archive = zipped(eval_magic_iteration(tmp_path / "ws").parent, tmp_path / "big.zip")
    assert "over the upload limit of 100 bytes" in refused(api, archive, status=413)


def test_it_refuses_path_traversal(api: Client, tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("../../outside.txt", "x")
    assert refused(api, archive).startswith("evil.zip")
    assert not (tmp_path.parent / "outside.txt").exists()


def test_it_refuses_a_symlink_that_escapes(api: Client, tmp_path: Path) -> None:
    archive = tmp_path / "links.tar.gz"
    with tarfile.open(archive, "w:gz") as out:
        info = tarfile.TarInfo("ws/passwd")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        out.addfile(info)
    assert refused(api, archive).startswith("links.tar.gz")


def test_it_refuses_a_zip_bomb(api: Client, tmp_path: Path, settings) -> None:
    settings.EVALSITE_ARCHIVE_MAX_BYTES = 1 << 20
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("ws/zeros.bin", bytes(8 << 20))  # 8 MiB of zeros, ~8 KB compressed
    assert archive.stat().st_size < 64 << 10
    assert "bomb.zip" in refused(api, archive)


def test_a_bad_file_inside_names_the_file_and_imports_nothing(api: Client, tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    grading = next(folder.rglob("grading.json"))
    write_json(grading, {"expectations": "not a list"})
    archive = zipped(folder.parent, tmp_path / "demo-skill.zip")
    detail = refused(api, archive)
    assert detail.startswith("demo-skill.zip!/")
    assert "grading.json" in detail


def test_imports_need_a_token(tmp_path: Path) -> None:
    archive = zipped(eval_magic_iteration(tmp_path / "ws").parent, tmp_path / "d.zip")
    data = io.BytesIO(archive.read_bytes())
    data.name = "d.zip"
    response = Client().post("/api/imports", {"archive": data})
    assert response.status_code == 401
    assert not Skill.objects.exists()


def test_the_api_docs_are_served_from_this_server(client: Client) -> None:
    html = client.get("/api/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    assert client.get("/api/openapi.json").json()["info"]["title"] == "evalsite"


def loose_files(folder: Path) -> dict[str, list]:
    files, paths = [], []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = io.BytesIO(path.read_bytes())
            data.name = path.name
            files.append(data)
            paths.append(path.relative_to(folder.parent.parent).as_posix())
    return {"files": files, "paths": paths}


def test_one_iteration_folder_can_be_sent_as_files(api: Client, tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws", label="iteration-7")
    response = api.post("/api/imports/files", loose_files(folder))
    assert response.status_code == 201, response.content
    assert Iteration.objects.get().label == "iteration-7"
    assert Iteration.objects.get().skill.name == "demo-skill"


@pytest.mark.parametrize(
    "bad", ["../outside/run.json", "/etc/passwd", "demo-skill/./x.json", "a\\\\b.json"]
)
def test_loose_files_must_stay_inside_the_upload(api: Client, tmp_path: Path, bad: str) -> None:
    body = loose_files(eval_magic_iteration(tmp_path / "ws"))
    body["paths"][0] = bad
    before = counts()
    response = api.post("/api/imports/files", body)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"{bad}: not a relative path inside the upload")
    assert counts() == before


def test_loose_files_need_one_path_each(api: Client, tmp_path: Path) -> None:
    body = loose_files(eval_magic_iteration(tmp_path / "ws"))
    body["paths"].pop()
    response = api.post("/api/imports/files", body)
    assert response.status_code == 400
    assert response.json()["detail"].startswith("paths: ")


def test_feedback_json_notes_come_with_their_runs(api: Client, sample) -> None:
    runs = get(api, "/api/skills/changelog-from-commits/iterations/2/runs?limit=500")["items"]
    notes = [r for run in runs for r in run["reviews"]]
    assert notes and {n["source"] for n in notes} == {"feedback.json"}
    assert all(n["kind"] == "note" and n["author"] is None for n in notes)


def test_keep_going_imports_the_valid_iterations_and_lists_the_rejected(
    api: Client, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    eval_magic_iteration(workspace, skill="good")
    bad = eval_magic_iteration(workspace, skill="bad")
    (bad / "eval-alpha" / "with_skill" / "grading.json").write_text("{")
    archive = io.BytesIO(zipped(workspace, tmp_path / "ws.zip").read_bytes())
    archive.name = "ws.zip"

    response = api.post("/api/imports", {"archive": archive, "keep_going": "true"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["counts"]["iterations"] == {"created": 1}
    [line] = body["rejected"]
    assert line.startswith("ws.zip!/ws/bad/iteration-1/eval-alpha/with_skill/grading.json: ")
    assert "evalsite-" not in line
    assert list(Iteration.objects.values_list("skill__name", flat=True)) == ["good"]


@pytest.mark.parametrize(
    "headers", [{"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic eDp5"}, {}]
)
def test_a_write_without_a_valid_token_is_401_json_not_a_csrf_failure(
    tmp_path: Path, headers: dict[str, str]
) -> None:
    archive = io.BytesIO(b"PK")
    archive.name = "x.zip"

    response = Client(headers=headers).post("/api/imports", {"archive": archive})

    assert response.status_code == 401
    assert response.json()["detail"].startswith("authentication required")
    assert response["WWW-Authenticate"] == "Bearer"


def test_a_logged_in_browser_still_needs_its_csrf_token_to_write(user) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    archive = io.BytesIO(b"PK")
    archive.name = "x.zip"

    assert browser.post("/api/imports", {"archive": archive}).status_code == 403
