"""Uploading a workspace archive through the browser form."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.test import Client

from runs.models import Iteration, Run
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def staging(settings, tmp_path: Path) -> None:
    """Previews are staged in the test's own folder, not the machine's temporary one."""
    settings.EVALSITE_UPLOAD_STAGING_DIR = str(tmp_path / "staging")


def archive_of(folder: Path, name: str = "demo-skill.zip") -> io.BytesIO:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as out:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                out.write(path, path.relative_to(folder.parent).as_posix())
    data.seek(0)
    data.name = name
    return data


def test_an_upload_is_imported_and_reported(client: Client, tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws").parent

    dry = client.post("/imports/", {"archive": archive_of(folder), "dry_run": "on"})
    assert "Dry run, nothing saved" in dry.content.decode()
    assert not Run.objects.exists()

    done = client.post("/imports/", {"archive": archive_of(folder)})
    assert done.status_code == 200
    assert "Imported skills: 1 created" in done.content.decode()
    assert Iteration.objects.count() == 1


def test_a_bad_upload_is_refused_with_its_one_line_error(client: Client, tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    next(folder.rglob("grading.json")).write_text("{ not json")
    response = client.post("/imports/", {"archive": archive_of(folder.parent)})
    assert response.status_code == 400
    html = response.content.decode()
    assert "demo-skill.zip!/" in html and "grading.json" in html
    assert "evalsite-upload-" not in html
    assert not Run.objects.exists()


def test_the_upload_form_escapes_the_file_name(client: Client) -> None:
    upload = io.BytesIO(b"x")
    upload.name = "<img src=x onerror=alert(1)>.txt"
    html = client.post("/imports/", {"archive": upload}).content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;.txt: not a .zip" in html


def test_keep_going_on_the_page_lists_each_rejected_iteration(
    client: Client, tmp_path: Path
) -> None:
    eval_magic_iteration(tmp_path / "ws", skill="good")
    bad = eval_magic_iteration(tmp_path / "ws", skill="bad")
    (bad / "eval-alpha" / "with_skill" / "grading.json").write_text("{")

    response = client.post(
        "/imports/", {"archive": archive_of(tmp_path / "ws" / "good", "ws.zip"), "keep_going": "on"}
    )
    assert response.status_code == 200

    response = client.post(
        "/imports/", {"archive": archive_of(bad.parent, "ws.zip"), "keep_going": "on"}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "1 rejected" in html and "rejected</span> ws.zip!/" in html
    assert "evalsite-upload-" not in html
    assert Iteration.objects.count() == 1


def test_a_preview_shows_the_plan_and_the_import_needs_no_second_upload(
    client: Client, tmp_path: Path
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws").parent
    (folder / "notes").mkdir()
    (folder / "notes" / "eval_summary.json").write_text("{}", "utf-8")

    preview = client.post("/imports/", {"archive": archive_of(folder), "action": "preview"})

    page = preview.content.decode()
    assert "Preview of demo-skill.zip: Dry run, nothing saved" in page
    assert "    iteration-1 &lt;- demo-skill.zip!/demo-skill/iteration-1" in page
    assert "demo-skill/notes/eval_summary.json: unrecognised result format" in page
    assert "/tmp/" not in page  # where the server keeps it is nobody's business
    assert not Run.objects.exists()
    token = preview.context["staged"].token

    done = client.post("/imports/", {"token": token})
    assert "Imported skills: 1 created" in done.content.decode()
    assert Iteration.objects.count() == 1
    again = client.post("/imports/", {"token": token})  # one preview, one import
    assert again.status_code == 400
    assert Iteration.objects.count() == 1


def test_a_preview_is_imported_only_by_the_session_that_made_it(
    client: Client, tmp_path: Path, django_user_model
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws").parent
    preview = client.post("/imports/", {"archive": archive_of(folder), "action": "preview"})
    other = Client()
    other.force_login(django_user_model.objects.create_user("other", password="pw"))

    stolen = other.post("/imports/", {"token": preview.context["staged"].token})

    assert stolen.status_code == 400
    assert "not yours or has expired" in stolen.content.decode()
    assert not Iteration.objects.exists()


def test_stale_previews_are_removed(client: Client, tmp_path: Path, settings) -> None:
    settings.EVALSITE_UPLOAD_STAGING_SECONDS = 0
    folder = eval_magic_iteration(tmp_path / "ws").parent
    first = client.post("/imports/", {"archive": archive_of(folder), "action": "preview"})
    client.post("/imports/", {"archive": archive_of(folder), "action": "preview"})

    expired = client.post("/imports/", {"token": first.context["staged"].token})

    assert "has expired or was imported already" in expired.content.decode()
    assert len(list((tmp_path / "staging" / "evalsite-staged").iterdir())) == 1
