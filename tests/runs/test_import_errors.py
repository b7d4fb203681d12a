"""Bad input: one line naming the file, the JSON pointer and what was expected; nothing saved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runs.importing import import_workspace
from runs.models import Iteration
from tests.factories import eval_magic_iteration, skill_folder, write_json
from tests.runs.rows import failure, row_counts

pytestmark = pytest.mark.django_db


def test_malformed_json_names_the_file_line_and_column(tmp_path: Path, existing: dict) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    grading = folder / "eval-alpha" / "with_skill" / "grading.json"
    grading.write_text('{"assertion_results": [}', encoding="utf-8")

    message = failure([folder])

    assert message == (
        f"{folder}/eval-alpha/with_skill/grading.json: invalid JSON: "
        "Expecting value (line 1, column 24)"
    )
    assert row_counts() == existing


def test_non_utf8_bytes_are_reported_with_their_offset(tmp_path: Path, existing: dict) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    (folder / "eval-alpha" / "with_skill" / "run.json").write_bytes(b'{"prompt": "caf\xe9"}')

    message = failure([folder])

    assert message == (
        f"{folder}/eval-alpha/with_skill/run.json: not valid UTF-8 (byte 0xe9 at offset 15)"
    )
    assert row_counts() == existing


@pytest.mark.parametrize(
    ("relpath", "change", "expected"),
    [
        (
            "conditions.json",
            lambda d: d.update(mode="sideways"),
            'at /mode: expected one of "new-skill", "revision", got "sideways"',
        ),
        (
            "eval-alpha/with_skill/grading.json",
            lambda d: d["assertion_results"][0].update(passed="yes"),
            'at /assertion_results/0/passed: expected boolean, got "yes"',
        ),
        (
            "eval-alpha/with_skill/run.json",
            lambda d: d.pop("final_message"),
            "at /final_message: missing required key 'final_message'",
        ),
        (
            "eval-alpha/with_skill/conversation.json",
            lambda d: d.update(status="finished"),
            'at /status: expected one of "completed", "stopped", "timed_out", got "finished"',
        ),
        (
            "eval-alpha/with_skill/conversation.json",
            lambda d: d["events"][1].pop("round"),
            "conversation.json at /events/1/round: missing required key 'round'",
        ),
        (
            "eval-alpha/with_skill/timing.json",
            lambda d: d.update(total_tokens="many"),
            'at /total_tokens: expected integer or null, got "many"',
        ),
        (
            "benchmark.json",
            lambda d: d.update(extra_key=1),
            "benchmark.json: unexpected key 'extra_key' (schema benchmark.schema.json)",
        ),
    ],
)
def test_a_schema_violation_in_each_eval_magic_file_kind_is_rejected(
    tmp_path: Path, existing: dict, relpath: str, change, expected: str
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    write_json(
        folder / "benchmark.json",
        {
            "generated": "2026-05-01T10:10:00Z",
            "mode": "new-skill",
            "conditions_compared": ["with_skill", "without_skill"],
            "missing_gradings": 0,
            "validity_warnings": [],
            "run_summary": {},
            "delta": {
                "direction": "with_skill - without_skill",
                "pass_rate": 0.5,
                "duration_ms": 0,
                "total_tokens": 0,
            },
        },
    )
    path = folder / relpath
    data = json.loads(path.read_text())
    change(data)
    write_json(path, data)

    message = failure([folder])

    assert message.startswith(f"{folder}/{relpath}")
    assert expected in message
    assert row_counts() == existing


def test_an_eval_magic_grading_without_summary_is_rejected(tmp_path: Path, existing: dict) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    path = folder / "eval-alpha" / "without_skill" / "grading.json"
    data = json.loads(path.read_text())
    del data["summary"]
    write_json(path, data)

    message = failure([folder])

    assert message == (
        f"{path} at /summary: missing required key 'summary' (schema grading.schema.json)"
    )
    assert row_counts() == existing


def test_a_schema_violation_in_evals_json_is_rejected(tmp_path: Path, existing: dict) -> None:
    folder = skill_folder(tmp_path, name="demo-skill")
    path = folder / "evals" / "evals.json"
    data = json.loads(path.read_text())
    data["evals"][0]["id"] = "Not Kebab"
    write_json(path, data)

    message = failure([folder])

    assert message.startswith(f"{folder}/evals/evals.json at /evals/0/id: ")
    assert row_counts() == existing


def test_duplicate_eval_ids_are_rejected(tmp_path: Path, existing: dict) -> None:
    case = {"id": "same", "prompt": "p", "expected_output": "e"}
    folder = skill_folder(tmp_path, name="dup", evals=[case, dict(case)])

    message = failure([folder])

    assert message == (
        f"{folder}/evals/evals.json at /evals/1/id: duplicate eval id 'same' (first at /evals/0)"
    )
    assert row_counts() == existing


def test_a_bad_file_late_in_a_multi_path_import_saves_nothing(
    tmp_path: Path, existing: dict
) -> None:
    good = eval_magic_iteration(tmp_path / "good", skill="good")
    bad = eval_magic_iteration(tmp_path / "bad", skill="bad")
    (bad / "eval-alpha" / "with_skill" / "timing.json").write_text("[1,", encoding="utf-8")

    failure([good, bad])

    assert row_counts() == existing


def test_an_empty_folder_is_no_workspace(tmp_path: Path, existing: dict) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()

    message = failure([empty])

    assert message.startswith(f"{empty}: no workspace found here")
    assert row_counts() == existing


def test_a_missing_path_is_named(tmp_path: Path, existing: dict) -> None:
    message = failure([tmp_path / "nope"])

    assert message == f"{tmp_path / 'nope'}: no such file or folder"
    assert row_counts() == existing


def test_a_file_that_is_not_an_archive_is_rejected(tmp_path: Path, existing: dict) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello", encoding="utf-8")

    message = failure([notes])

    assert message == f"{notes}: not a folder or a .zip / .tar.gz archive of a workspace"
    assert row_counts() == existing


def zip_of(folder: Path, archive: Path, *, extra: dict[str, bytes] | None = None) -> Path:
    import zipfile

    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder.parent).as_posix())
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return archive


def test_a_zip_archive_of_a_workspace_imports(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws", skill="zipped")
    archive = zip_of(folder.parent, tmp_path / "zipped.zip")

    report = import_workspace([archive])

    assert report.counts["runs"]["created"] == 2
    assert Iteration.objects.get().skill.name == "zipped"
    assert import_workspace([archive]).counts["runs"] == {"skipped": 2}


def test_a_tar_gz_of_a_lone_iteration_takes_its_skill_name_from_the_archive(
    tmp_path: Path,
) -> None:
    import tarfile

    folder = eval_magic_iteration(tmp_path / "ws", skill="anything")
    archive = tmp_path / "my-skill.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(folder, arcname="iteration-1")

    import_workspace([archive])

    assert Iteration.objects.get().skill.name == "my-skill"


@pytest.mark.parametrize(
    ("member", "expected"),
    [
        ("../evil.json", "member '../evil.json' escapes the archive root"),
        ("/etc/evil.json", "member '/etc/evil.json' has an absolute path"),
    ],
)
def test_an_archive_with_an_escaping_member_is_rejected(
    tmp_path: Path, existing: dict, member: str, expected: str
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    archive = zip_of(folder.parent, tmp_path / "bad.zip", extra={member: b"{}"})

    message = failure([archive])

    assert message == f"{archive}: {expected}"
    assert row_counts() == existing
    assert not (tmp_path / "evil.json").exists()


def test_an_archive_with_a_symlink_pointing_outside_is_rejected(
    tmp_path: Path, existing: dict
) -> None:
    import io
    import tarfile

    folder = eval_magic_iteration(tmp_path / "ws")
    archive = tmp_path / "link.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(folder, arcname="iteration-1")
        link = tarfile.TarInfo("iteration-1/eval-alpha/with_skill/timing.json.bak")
        link.type = tarfile.SYMTYPE
        link.linkname = "../../../../../etc/passwd"
        tf.addfile(link, io.BytesIO())

    message = failure([archive])

    assert message.startswith(f"{archive}: member ")
    assert "links outside the archive" in message
    assert row_counts() == existing


def test_an_archive_over_the_size_limit_is_rejected(
    tmp_path: Path, existing: dict, settings
) -> None:
    settings.EVALSITE_ARCHIVE_MAX_BYTES = 1000
    folder = eval_magic_iteration(tmp_path / "ws")
    archive = zip_of(folder.parent, tmp_path / "big.zip", extra={"ws/pad.bin": bytes(5000)})

    message = failure([archive])

    assert message == (
        f"{archive}: archive expands to more than 1000 bytes (limit EVALSITE_ARCHIVE_MAX_BYTES)"
    )
    assert row_counts() == existing


def test_an_archive_over_the_file_count_limit_is_rejected(
    tmp_path: Path, existing: dict, settings
) -> None:
    settings.EVALSITE_ARCHIVE_MAX_FILES = 3
    folder = eval_magic_iteration(tmp_path / "ws")
    archive = zip_of(folder.parent, tmp_path / "many.zip")

    message = failure([archive])

    assert (
        message == f"{archive}: archive holds more than 3 files (limit EVALSITE_ARCHIVE_MAX_FILES)"
    )
    assert row_counts() == existing
