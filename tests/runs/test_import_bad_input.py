"""Bad input: one line, nothing changed, never a crash.

JSON the stdlib would accept but a database or a page would choke on (NaN, huge numbers,
duplicate keys, deep nesting), archives and uploads whose paths collide, hostile or merely
sloppy SKILL.md front matter, result files too big to read.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import time
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from django.http import HttpResponse
from django.test import Client

from accounts.models import ApiToken
from runs.importing import ImportFailure, import_workspace
from runs.importing.archives import extract_archive
from runs.importing.frontmatter import FrontMatter, parse_front_matter
from runs.importing.jsonfiles import parse_json, parse_timestamp
from runs.importing.tree import MAX_READ_BYTES, MAX_RESULT_BYTES
from runs.models import Run
from tests.factories import (
    conversation,
    eval_magic_iteration,
    skill_creator_iteration,
    write_json,
)
from tests.runs.rows import failure, row_counts

pytestmark = pytest.mark.django_db

RUN = "eval-alpha/with_skill"
MiB = 1 << 20


def edit_json(path: Path, text_change: tuple[str, str]) -> None:
    """Replace text in a JSON file as written: the bad input cannot be built with json.dumps."""
    old, new = text_change
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# --- numbers JSON has not got, or the database cannot hold ------------------------------------


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused_with_their_pointer(
    tmp_path: Path, existing: dict, constant: str
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    edit_json(folder / RUN / "grading.json", ('"confidence": 1.0', f'"confidence": {constant}'))

    message = failure([folder])

    assert message == (
        f"{folder}/{RUN}/grading.json at /assertion_results/0/confidence: "
        f"{constant} is not valid JSON (JSON has no NaN or Infinity; write null)"
    )
    assert row_counts() == existing


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ("1e400", "number 1e400 is out of range (too large for a double)"),
        # orjson would read these as floats, silently rounded, or as unsigned 64-bit.
        (
            "99999999999999999999999",
            "integer 99999999999999999999999 is out of range (JSON integers must fit in 64 bits)",
        ),
        (
            "9223372036854775808",
            "integer 9223372036854775808 is out of range (JSON integers must fit in 64 bits)",
        ),
        (
            "-9223372036854775809",
            "integer -9223372036854775809 is out of range (JSON integers must fit in 64 bits)",
        ),
        (
            "1" + "0" * 5000,
            "integer 10000000000000000000... (5001 digits) is out of range"
            " (JSON integers must fit in 64 bits)",
        ),
    ],
    ids=["overflowing-double", "beyond-64-bits", "above-int64", "below-int64", "5001-digits"],
)
def test_numbers_out_of_range_are_refused_with_their_pointer(
    tmp_path: Path, existing: dict, literal: str, expected: str
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    edit_json(folder / RUN / "timing.json", ('"total_tokens": 1001', f'"total_tokens": {literal}'))

    message = failure([folder])

    assert message == f"{folder}/{RUN}/timing.json at /total_tokens: {expected}"
    assert row_counts() == existing


def test_the_largest_64_bit_integer_still_imports(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    largest = (1 << 63) - 1
    edit_json(folder / RUN / "timing.json", ('"total_tokens": 1001', f'"total_tokens": {largest}'))

    import_workspace([folder])

    assert Run.objects.get(condition__name="with_skill").total_tokens == largest


@pytest.mark.parametrize(
    "value",
    [
        "0001-01-01T00:00:00Z",
        "1899-12-31T23:59:59Z",
        "9001-01-01T00:00:00Z",
        "9999-12-31T23:59:59-14:00",  # a valid datetime that overflows when made UTC
        "0001-01-01T00:00:00+14:00",
    ],
)
def test_a_timestamp_out_of_range_is_refused_with_its_pointer(value: str) -> None:
    with pytest.raises(ImportFailure) as info:
        parse_timestamp(value, display="ws/conditions.json", pointer="/timestamp")

    assert str(info.value) == (
        f"ws/conditions.json at /timestamp: timestamp {value!r} is out of range"
        " (years 1900 to 9000)"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-05-01T10:00:00Z", datetime(2026, 5, 1, 10, tzinfo=UTC)),
        ("2026-05-01T10:00:00", datetime(2026, 5, 1, 10, tzinfo=UTC)),  # naive means UTC
        (
            " 2026-05-01T12:00:00+02:00 ",
            datetime(2026, 5, 1, 12, tzinfo=timezone(timedelta(hours=2))),
        ),
        ("1900-01-01T00:00:00Z", datetime(1900, 1, 1, tzinfo=UTC)),
        # skill-creator files are written by hand: a timestamp that does not parse is absent.
        ("yesterday", None),
        ("2026-13-01T00:00:00Z", None),
        ("", None),
        (None, None),
        (1714557600, None),
    ],
)
def test_timestamps_parse_leniently_into_aware_datetimes(
    value: object, expected: datetime | None
) -> None:
    parsed = parse_timestamp(value, display="f.json", pointer="/timestamp")

    assert parsed == expected
    if parsed is not None:
        assert parsed.tzinfo is not None


# --- duplicate keys ------------------------------------------------------------------------------


def test_a_duplicate_key_is_refused_naming_the_key_and_its_object(
    tmp_path: Path, existing: dict
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    # orjson would keep the last value: this assertion would silently become a failure.
    edit_json(
        folder / RUN / "grading.json", ('"passed": true,', '"passed": true, "passed": false,')
    )

    message = failure([folder])

    assert message == (
        f"{folder}/{RUN}/grading.json at /assertion_results/0: "
        "key 'passed' appears twice in this object"
    )
    assert row_counts() == existing


def test_a_duplicate_top_level_key_names_the_file_alone(tmp_path: Path, existing: dict) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    edit_json(
        folder / "conditions.json", ('"mode": "new-skill",', '"mode": "new-skill", "mode" :1,')
    )

    message = failure([folder])

    assert message == f"{folder}/conditions.json: key 'mode' appears twice in this object"
    assert row_counts() == existing


def test_skill_creator_files_are_lenient_but_not_about_duplicate_keys(
    tmp_path: Path, existing: dict
) -> None:
    folder = skill_creator_iteration(tmp_path / "ws")
    grading = folder / "eval-0-summarise" / "with_skill" / "run-1" / "grading.json"
    edit_json(grading, ('"evidence": "Total: 4"', '"evidence": "Total: 4", "evidence": "none"'))

    message = failure([folder])

    assert message == (
        f"{folder}/eval-0-summarise/with_skill/run-1/grading.json at /expectations/0: "
        "key 'evidence' appears twice in this object"
    )
    assert row_counts() == existing


def test_json_quoted_inside_strings_is_not_mistaken_for_duplicate_keys(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    quoted = json.dumps({"name": "demo", "name ": 1, "scripts": {"test": "pytest"}})
    events = conversation()
    events["events"][1]["result"] = quoted + ' "a" : "b", \\": \\\\'
    write_json(folder / RUN / "conversation.json", events)

    import_workspace([folder])

    run = Run.objects.get(condition__name="with_skill")
    assert run.conversation[1]["result"].startswith(quoted)


@pytest.mark.parametrize(
    ("raw", "pointer", "key"),
    [
        (b'{"a": 1, "b": {"c": 1, "c": 2}}', " at /b", "c"),
        (b'{"a" :1, "a"\n:2}', "", "a"),  # whitespace before the colon
        (b'{"a\\\\":1, "a\\\\":2}', "", "a\\"),  # a key ending in an escaped backslash
        (b'[{"x": [1, {"k": 1, "k": 1}]}]', " at /0/x/1", "k"),
    ],
)
def test_duplicate_keys_are_found_however_the_json_is_written(
    raw: bytes, pointer: str, key: str
) -> None:
    with pytest.raises(ImportFailure) as info:
        parse_json(raw, display="f.json")

    assert str(info.value) == f"f.json{pointer}: key {key!r} appears twice in this object"


# --- nesting ---------------------------------------------------------------------------------


def test_a_value_nested_too_deeply_is_refused_where_it_crosses_the_limit(
    tmp_path: Path, existing: dict
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    events = conversation()
    deep: list = []
    for _ in range(200):
        deep = [deep]
    events["events"][1]["args"]["deep"] = deep
    write_json(folder / RUN / "conversation.json", events)

    message = failure([folder])

    # The document is level 1, events 2, the event 3, args 4, deep 5: level 65 is 60 below.
    assert message == (
        f"{folder}/{RUN}/conversation.json at /events/1/args/deep{'/0' * 60}: "
        "nested deeper than 64 levels"
    )
    assert row_counts() == existing


def test_a_hundred_thousand_nested_lists_are_refused_quickly(
    tmp_path: Path, existing: dict
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    (folder / RUN / "run.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)

    started = time.monotonic()
    message = failure([folder])

    assert time.monotonic() - started < 10
    assert message == f"{folder}/{RUN}/run.json at {'/0' * 64}: nested deeper than 64 levels"
    assert row_counts() == existing


def test_nesting_up_to_the_limit_is_accepted() -> None:
    value: list = []
    for _ in range(63):
        value = [value]  # 64 levels with the outermost

    assert parse_json(json.dumps(value).encode(), display="f.json") == value


# --- archives and uploads whose paths collide ------------------------------------------------

#: Writes an archive at a path from (member name, bytes) entries.
Builder = Callable[..., Path]


def zip_of(path: Path, *entries: tuple[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries:
            # zipfile warns, and writes the duplicate all the same: what a hostile tool does.
            duplicate = name in archive.NameToInfo
            with pytest.warns(UserWarning) if duplicate else contextlib.nullcontext():
                archive.writestr(name, data)
    return path


def tar_of(path: Path, *entries: tuple[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def extraction_failure(archive: Path, tmp_path: Path) -> str:
    into = tmp_path / "out"
    into.mkdir(parents=True)
    with pytest.raises(ImportFailure) as info:
        extract_archive(archive, into, max_bytes=MiB, max_files=100)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("build", [zip_of, tar_of])
def test_an_archive_member_twice_is_refused(tmp_path: Path, build: Builder) -> None:
    archive = build(tmp_path / "dup.archive", ("ws/a.json", b"{}"), ("ws/a.json", b"[]"))

    assert extraction_failure(archive, tmp_path) == (
        f"{archive}: member 'ws/a.json' appears twice in the archive"
    )


@pytest.mark.parametrize("build", [zip_of, tar_of])
def test_an_archive_member_twice_under_another_spelling_is_refused(
    tmp_path: Path, build: Builder
) -> None:
    archive = build(tmp_path / "dup.archive", ("ws/a.json", b"{}"), ("./ws//a.json", b"[]"))

    assert extraction_failure(archive, tmp_path) == (
        f"{archive}: member './ws//a.json' is the same path as member 'ws/a.json'"
    )


@pytest.mark.parametrize("build", [zip_of, tar_of])
def test_an_archive_member_that_is_both_file_and_folder_is_refused(
    tmp_path: Path, build: Builder
) -> None:
    file_first = build(tmp_path / "a.archive", ("ws/x", b"1"), ("ws/x/y", b"2"))
    folder_first = build(tmp_path / "b.archive", ("ws/x/y", b"2"), ("ws/x", b"1"))

    assert extraction_failure(file_first, tmp_path / "1") == (
        f"{file_first}: member 'ws/x/y' needs 'ws/x' to be a folder, but member 'ws/x' is a file"
    )
    assert extraction_failure(folder_first, tmp_path / "2") == (
        f"{folder_first}: member 'ws/x' is a file, but other members are inside it as a folder"
    )


def test_a_link_with_the_path_of_a_file_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "links.tar.gz"
    with tarfile.open(archive, "w:gz") as out:
        link = tarfile.TarInfo("ws/a.json")
        link.type, link.linkname = tarfile.SYMTYPE, "b.json"
        out.addfile(link)
        data = tarfile.TarInfo("ws/a.json")
        out.addfile(data, io.BytesIO(b""))

    assert extraction_failure(archive, tmp_path) == (
        f"{archive}: member 'ws/a.json' appears twice in the archive"
    )


def test_a_folder_listed_twice_is_harmless(tmp_path: Path) -> None:
    into = tmp_path / "out"
    into.mkdir()
    with zipfile.ZipFile(tmp_path / "ok.zip", "w") as out:
        out.writestr("ws/", b"")
        out.writestr("ws/a.json", b"{}")
        out.writestr("./ws/", b"")

    root = extract_archive(tmp_path / "ok.zip", into, max_bytes=MiB, max_files=100)

    assert (root / "a.json").read_bytes() == b"{}"


@pytest.fixture
def api(user: object) -> Client:
    token = ApiToken(user=user, name="CI")
    secret = token.set_secret()
    token.save()
    return Client(headers={"Authorization": f"Bearer {secret}"})


def refused(response: HttpResponse, before: dict[str, int]) -> str:
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert "\n" not in detail and "evalsite-upload-" not in detail
    assert row_counts() == before
    return detail


def zipped_iteration(tmp_path: Path, *extra: tuple[str, bytes]) -> io.BytesIO:
    folder = eval_magic_iteration(tmp_path / "ws")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder.parent.parent).as_posix())
        for name, data in extra:
            with pytest.warns(UserWarning, match="Duplicate name"):
                archive.writestr(name, data)
    buffer.seek(0)
    buffer.name = "demo-skill.zip"
    return buffer


def test_the_api_refuses_an_archive_with_a_member_twice(
    api: Client, tmp_path: Path, existing: dict
) -> None:
    member = f"demo-skill/iteration-1/{RUN}/grading.json"
    upload = zipped_iteration(tmp_path, (member, b'{"assertion_results": []}'))

    detail = refused(api.post("/api/imports", {"archive": upload}), existing)

    assert detail == f"demo-skill.zip: member {member!r} appears twice in the archive"


def loose_files(folder: Path, *extra: tuple[str, bytes]) -> dict[str, list]:
    files, paths = [], []
    entries = [
        (path.relative_to(folder.parent.parent).as_posix(), path.read_bytes())
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    ]
    for relative, data in [*entries, *extra]:
        upload = io.BytesIO(data)
        upload.name = relative.rpartition("/")[2]
        files.append(upload)
        paths.append(relative)
    return {"files": files, "paths": paths}


@pytest.mark.parametrize("folder_first", [False, True])
def test_the_api_refuses_files_where_one_path_is_the_folder_of_another(
    api: Client, tmp_path: Path, existing: dict, folder_first: bool
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    file = "demo-skill/iteration-1/notes"
    inside = "demo-skill/iteration-1/notes/today.txt"
    extra = [(file, b"x"), (inside, b"y")]
    body = loose_files(folder, *(reversed(extra) if folder_first else extra))

    detail = refused(api.post("/api/imports/files", body), existing)

    assert detail == f"{file}: uploaded as a file and also as the folder holding {inside!r}"


def test_the_api_refuses_one_file_sent_twice_under_another_spelling(
    api: Client, tmp_path: Path, existing: dict
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    respelled = "./demo-skill/iteration-1/conditions.json"
    body = loose_files(folder, (respelled, b"{}"))

    detail = refused(api.post("/api/imports/files", body), existing)

    assert detail == (
        f"{respelled}: not a relative path inside the upload (no '..', no leading '/')"
    )


def test_the_api_refuses_a_file_name_too_long_to_save(
    api: Client, tmp_path: Path, existing: dict
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    long_name = "demo-skill/iteration-1/" + "n" * 300 + ".json"
    body = loose_files(folder, (long_name, b"{}"))

    detail = refused(api.post("/api/imports/files", body), existing)

    assert detail == f"{long_name}: cannot save the upload: File name too long"


# --- SKILL.md front matter -----------------------------------------------------------------


def billion_laughs(levels: int = 9) -> str:
    lines = ["---", "name: lol", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    lines += [f"description: *a{levels}", "---", "", "# lol", ""]
    return "\n".join(lines)


def test_a_yaml_alias_bomb_is_refused_in_bounded_time() -> None:
    started = time.monotonic()
    with pytest.raises(ImportFailure) as info:
        parse_front_matter(billion_laughs(), display="lol/SKILL.md")

    assert time.monotonic() - started < 1
    assert str(info.value) == (
        "lol/SKILL.md: front matter uses a YAML alias (*a0, line 4); SKILL.md front matter"
        " has no use for aliases, and they can expand a few lines into gigabytes"
    )


def test_front_matter_nested_too_deeply_is_refused() -> None:
    text = "---\nname: x\ndescription: " + "[" * 5000 + "]" * 5000 + "\n---\n"

    with pytest.raises(ImportFailure) as info:
        parse_front_matter(text, display="x/SKILL.md")

    assert str(info.value) == "x/SKILL.md: front matter nests deeper than 64 levels"


def test_front_matter_over_64_kib_is_refused() -> None:
    text = "---\nname: x\ndescription: " + "a" * (64 * 1024) + "\n---\n"

    with pytest.raises(ImportFailure) as info:
        parse_front_matter(text, display="x/SKILL.md")

    assert str(info.value) == "x/SKILL.md: front matter is 65557 bytes, over the 64 KiB limit"


def test_an_unquoted_colon_in_the_description_is_read_line_by_line_with_a_warning() -> None:
    text = (
        "---\nname: demo\ndescription: Use when: the user asks\n  for a demo\n"
        "allowed-tools: Read\n---\n# Demo\n"
    )

    parsed = parse_front_matter(text, display="demo/SKILL.md")

    assert parsed == FrontMatter(
        name="demo",
        description="Use when: the user asks for a demo",
        warning=(
            "demo/SKILL.md: front matter is not valid YAML (mapping values are not allowed"
            " here, line 3 column 22); name and description read line by line instead"
        ),
    )


@pytest.mark.parametrize(
    ("front", "name", "description"),
    [
        ("name: [unclosed\ndescription: Fine: mostly", None, "Fine: mostly"),
        (
            "name: 'quoted'\ndescription: >\n  Folded: text\n  here\nbad: [x",
            "quoted",
            "Folded: text here",
        ),
        ("name: demo\ndescription: *Always* use this", "demo", "*Always* use this"),
        ("name: demo\ndate: 2024-13-45\ndescription: Fine", "demo", "Fine"),
        ("just a sentence", None, ""),
    ],
)
def test_front_matter_that_is_not_valid_yaml_falls_back_to_plain_lines(
    front: str, name: str | None, description: str
) -> None:
    parsed = parse_front_matter(f"---\n{front}\n---\nbody\n", display="s/SKILL.md")

    assert (parsed.name, parsed.description) == (name, description)
    assert parsed.warning is not None and "\n" not in parsed.warning
    assert parsed.warning.startswith("s/SKILL.md: front matter is not")


def test_valid_front_matter_is_read_as_yaml_without_a_warning() -> None:
    text = '---\nname: demo\ndescription: "Use when: quoted"\nmetadata: {a: 1}\n---\n'

    assert parse_front_matter(text, display="s/SKILL.md") == FrontMatter(
        name="demo", description="Use when: quoted"
    )
    assert parse_front_matter("# no front matter\n", display="s") == FrontMatter(None, "")


# --- result files larger than the read limit -------------------------------------------------


def test_a_conversation_over_the_artefact_read_limit_is_still_imported(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    events = conversation(final="x" * (MAX_READ_BYTES + MiB))
    write_json(folder / RUN / "conversation.json", events)

    import_workspace([folder])

    run = Run.objects.get(condition__name="with_skill")
    assert run.conversation_events == 3
    assert len(run.conversation[2]["text"]) == MAX_READ_BYTES + MiB


def test_a_result_file_over_the_hard_limit_is_refused_unread(
    tmp_path: Path, existing: dict
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    with open(folder / RUN / "conversation.json", "r+b") as file:
        file.truncate(MAX_RESULT_BYTES + 1)  # sparse: costs no disk, and is never read

    message = failure([folder])

    assert message == (
        f"{folder}/{RUN}/conversation.json: 268435457 bytes (256.0 MiB) is over the"
        " 256 MiB limit for a result file"
    )
    assert row_counts() == existing


def test_a_large_agent_artefact_is_listed_by_size_and_not_read(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path / "ws", runs=1)
    artefact = folder / "eval-0-summarise" / "with_skill" / "run-1" / "outputs" / "dump.json"
    with open(artefact, "wb") as file:
        file.truncate(MAX_RESULT_BYTES + 1)

    import_workspace([folder])

    run = Run.objects.get(condition__name="with_skill")
    listed = {entry["path"]: entry for entry in run.artifacts["outputs"]}
    assert listed["dump.json"] == {"path": "dump.json", "size": MAX_RESULT_BYTES + 1}
