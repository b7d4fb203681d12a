"""Extracting result archives, including hostile ones built here with zipfile and tarfile."""

from __future__ import annotations

import gzip
import io
import stat
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest

from runs.importing.archives import archive_kind, extract_archive
from runs.importing.errors import ImportFailure

MiB = 1 << 20
ROOMY = {"max_bytes": 10 * MiB, "max_files": 100}
ALLOWED = "only files, directories and links are allowed"


# --- builders -------------------------------------------------------------------------------


def write_zip(path: Path, *entries: tuple[str | zipfile.ZipInfo, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return path


def zip_link(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # Unix, so the mode in external_attr means what it says
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


def tar_file(name: str, data: bytes = b"") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def tar_entry(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info, b""


def write_tar(path: Path, *entries: tuple[tarfile.TarInfo, bytes], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as archive:
        for info, data in entries:
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


class Zeros(io.RawIOBase):
    """A stream of `size` zero bytes that never holds them all in memory."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count


def files_under(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def bytes_under(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


def everything_outside(tmp_path: Path, into: Path) -> set[Path]:
    return {path for path in tmp_path.rglob("*") if path != into and into not in path.parents}


def extract(archive: Path, tmp_path: Path, **limits: int) -> tuple[Path, Path]:
    into = tmp_path / "into"
    into.mkdir()
    return into, extract_archive(archive, into, **{**ROOMY, **limits})


def refusal(archive: Path, tmp_path: Path, **limits: int) -> str:
    """Extract an archive that must be refused; return the message.

    Also checks that nothing appeared outside `into` and that every byte limit held.
    """
    into = tmp_path / "into"
    into.mkdir()
    before = everything_outside(tmp_path, into)
    options = {**ROOMY, **limits}
    with pytest.raises(ImportFailure) as caught:
        extract_archive(archive, into, **options)
    assert everything_outside(tmp_path, into) == before
    assert bytes_under(into) <= options["max_bytes"]
    return str(caught.value)


# --- what a well-formed archive gives -------------------------------------------------------


def test_it_extracts_a_zip_with_nested_folders_and_imports_from_into(tmp_path: Path) -> None:
    archive = write_zip(
        tmp_path / "results.zip",
        ("benchmark.json", b"{}"),
        ("eval-0/with_skill/grading.json", b'{"passed": true}'),
        ("eval-0/with_skill/outputs/notes.md", b"# notes"),
    )

    into, root = extract(archive, tmp_path)

    assert root == into
    assert files_under(into) == {
        "benchmark.json": b"{}",
        "eval-0/with_skill/grading.json": b'{"passed": true}',
        "eval-0/with_skill/outputs/notes.md": b"# notes",
    }


def test_it_returns_the_single_top_level_directory_of_a_tar_gz_as_root(tmp_path: Path) -> None:
    archive = write_tar(
        tmp_path / "results.tgz",
        tar_entry("workspace", tarfile.DIRTYPE),
        tar_entry("workspace/iteration-1", tarfile.DIRTYPE),
        tar_file("workspace/iteration-1/benchmark.json", b"{}"),
        tar_file("workspace/iteration-1/eval-a/grading.json", b"[]"),
    )

    into, root = extract(archive, tmp_path)

    assert root == into / "workspace"
    assert files_under(root) == {
        "iteration-1/benchmark.json": b"{}",
        "iteration-1/eval-a/grading.json": b"[]",
    }


def test_it_extracts_an_uncompressed_tar(tmp_path: Path) -> None:
    archive = write_tar(tmp_path / "results.tar", tar_file("ws/a.json", b"1"), mode="w")

    into, root = extract(archive, tmp_path)

    assert root == into / "ws"
    assert files_under(root) == {"a.json": b"1"}


def test_it_skips_macos_junk_so_the_top_level_directory_is_still_found(tmp_path: Path) -> None:
    archive = write_zip(
        tmp_path / "results.zip",
        ("ws/", b""),
        ("ws/grading.json", b"{}"),
        ("ws/.DS_Store", b"junk"),
        ("__MACOSX/", b""),
        ("__MACOSX/ws/._grading.json", b"junk"),
    )

    into, root = extract(archive, tmp_path)

    assert root == into / "ws"
    assert files_under(into) == {"ws/grading.json": b"{}"}


def test_it_turns_internal_links_into_regular_copies(tmp_path: Path) -> None:
    archive = write_tar(
        tmp_path / "results.tar.gz",
        tar_file("ws/data/real.txt", b"content"),
        tar_entry("ws/link.txt", tarfile.SYMTYPE, "data/real.txt"),
        tar_entry("ws/data/up.txt", tarfile.SYMTYPE, "../link.txt"),  # a link to a link
        tar_entry("ws/hard.txt", tarfile.LNKTYPE, "ws/data/real.txt"),
    )

    into, root = extract(archive, tmp_path)

    for name in ("link.txt", "data/up.txt", "hard.txt"):
        assert not (root / name).is_symlink()
        assert (root / name).read_bytes() == b"content"


def test_it_turns_an_internal_zip_symlink_into_a_regular_copy(tmp_path: Path) -> None:
    archive = write_zip(
        tmp_path / "results.zip",
        ("ws/data/real.txt", b"content"),
        zip_link("ws/link.txt", "data/real.txt"),
    )

    into, root = extract(archive, tmp_path)

    assert not (root / "link.txt").is_symlink()
    assert (root / "link.txt").read_bytes() == b"content"


def test_it_counts_real_bytes_not_a_zip_header_that_overstates_them(tmp_path: Path) -> None:
    archive = write_zip(tmp_path / "results.zip", ("small.txt", b"x" * 100))
    patch_declared_size(archive, "small.txt", 50 * MiB)

    into, root = extract(archive, tmp_path, max_bytes=MiB)

    assert files_under(root) == {"small.txt": b"x" * 100}


def test_archive_kind_reads_the_content_not_the_file_name(tmp_path: Path) -> None:
    zip_named_tgz = write_zip(tmp_path / "a.tar.gz", ("a.json", b"{}"))
    tgz_named_zip = write_tar(tmp_path / "b.zip", tar_file("a.json", b"{}"))
    tar_named_bin = write_tar(tmp_path / "c.bin", tar_file("a.json", b"{}"), mode="w")
    json_named_zip = tmp_path / "d.zip"
    json_named_zip.write_text("{}")
    gzipped_json = tmp_path / "e.tar.gz"
    gzipped_json.write_bytes(gzip.compress(b'{"not": "a tar"}'))
    empty = tmp_path / "f.tgz"
    empty.touch()

    assert archive_kind(zip_named_tgz) == "zip"
    assert archive_kind(tgz_named_zip) == "tar"
    assert archive_kind(tar_named_bin) == "tar"
    assert archive_kind(json_named_zip) is None
    assert archive_kind(gzipped_json) is None
    assert archive_kind(empty) is None


def test_it_insists_on_an_empty_target_directory(tmp_path: Path) -> None:
    archive = write_zip(tmp_path / "results.zip", ("a.json", b"{}"))
    into = tmp_path / "into"
    into.mkdir()
    (into / "left-over").touch()

    with pytest.raises(ValueError, match="must be an existing empty directory"):
        extract_archive(archive, into, **ROOMY)


# --- files that are not archives, or broken ones --------------------------------------------


def test_it_refuses_a_file_that_is_not_an_archive(tmp_path: Path) -> None:
    archive = tmp_path / "results.zip"
    archive.write_text('{"evals": []}')

    assert refusal(archive, tmp_path) == f"{archive}: not a .zip or .tar.gz archive"


def test_it_refuses_a_gzipped_file_that_is_not_a_tar(tmp_path: Path) -> None:
    archive = tmp_path / "results.tar.gz"
    archive.write_bytes(gzip.compress(b'{"evals": []}'))

    assert refusal(archive, tmp_path) == f"{archive}: not a .zip or .tar.gz archive"


def test_it_names_an_archive_it_cannot_read(tmp_path: Path) -> None:
    archive = tmp_path / "missing.zip"

    message = refusal(archive, tmp_path)

    assert message == f"{archive}: cannot read archive: No such file or directory"


def test_it_refuses_a_truncated_zip_as_corrupt(tmp_path: Path) -> None:
    archive = write_zip(tmp_path / "results.zip", ("a.json", b"{}" * 1000))
    archive.write_bytes(archive.read_bytes()[:40])

    assert refusal(archive, tmp_path) == f"{archive}: corrupt archive: File is not a zip file"


def test_it_refuses_a_truncated_tar_gz_as_corrupt(tmp_path: Path) -> None:
    noise = bytes(range(256)) * 2000
    archive = write_tar(tmp_path / "results.tgz", tar_file("ws/a.bin", noise))
    archive.write_bytes(archive.read_bytes()[:-200])

    message = refusal(archive, tmp_path)

    assert message.startswith(f"{archive}: corrupt archive: ")
    assert "\n" not in message


def test_it_refuses_a_zip_member_whose_data_fails_its_checksum(tmp_path: Path) -> None:
    archive = write_zip(tmp_path / "results.zip", ("a.txt", b"hello world"))
    data = bytearray(archive.read_bytes())
    crc_at = data.index(b"PK\x03\x04") + 14  # CRC-32 field of the local header
    data[crc_at : crc_at + 4] = b"\0\0\0\0"
    central = data.index(b"PK\x01\x02") + 16  # and of the central directory
    data[central : central + 4] = b"\0\0\0\0"
    archive.write_bytes(bytes(data))

    message = refusal(archive, tmp_path)

    assert message == f"{archive}: corrupt archive: Bad CRC-32 for file 'a.txt'"


def test_it_refuses_an_encrypted_zip_member(tmp_path: Path) -> None:
    archive = write_zip(tmp_path / "results.zip", ("secret.json", b"{}"))
    data = bytearray(archive.read_bytes())  # zipfile cannot encrypt, so set the flag by hand
    data[data.index(b"PK\x03\x04") + 6] |= 0x1
    data[data.index(b"PK\x01\x02") + 8] |= 0x1
    archive.write_bytes(bytes(data))

    assert refusal(archive, tmp_path) == f"{archive}: member 'secret.json' is encrypted"


# --- members that try to land outside the target --------------------------------------------


@pytest.mark.parametrize("name", ["../escaped.txt", "ws/../../escaped.txt", "..\\escaped.txt"])
def test_it_refuses_a_zip_member_that_climbs_out_of_the_root(tmp_path: Path, name: str) -> None:
    archive = write_zip(tmp_path / "results.zip", ("ws/ok.json", b"{}"), (name, b"gotcha"))

    message = refusal(archive, tmp_path)

    assert message == f"{archive}: member {name!r} escapes the archive root"
    assert not (tmp_path / "escaped.txt").exists()


def test_it_refuses_a_tar_member_that_climbs_out_of_the_root(tmp_path: Path) -> None:
    archive = write_tar(
        tmp_path / "results.tgz",
        tar_file("ws/ok.json", b"{}"),
        tar_file("ws/../../escaped.txt", b"gotcha"),
    )

    message = refusal(archive, tmp_path)

    assert message == f"{archive}: member 'ws/../../escaped.txt' escapes the archive root"
    assert not (tmp_path / "escaped.txt").exists()


def test_it_refuses_an_absolute_tar_member(tmp_path: Path) -> None:
    target = str(tmp_path / "escaped.txt")
    archive = write_tar(tmp_path / "results.tgz", tar_file(target, b"gotcha"))

    assert refusal(archive, tmp_path) == f"{archive}: member {target!r} has an absolute path"
    assert not (tmp_path / "escaped.txt").exists()


@pytest.mark.parametrize("name", ["/escaped.txt", "C:\\escaped.txt", "c:escaped.txt"])
def test_it_refuses_an_absolute_zip_member(tmp_path: Path, name: str) -> None:
    archive = write_zip(tmp_path / "results.zip", (name, b"gotcha"))

    assert refusal(archive, tmp_path) == f"{archive}: member {name!r} has an absolute path"


@pytest.mark.parametrize("target", ["../../secret.txt", "/etc/passwd"])
def test_it_refuses_a_tar_symlink_pointing_outside(tmp_path: Path, target: str) -> None:
    (tmp_path / "secret.txt").write_text("private")
    archive = write_tar(
        tmp_path / "results.tgz",
        tar_file("ws/ok.json", b"{}"),
        tar_entry("ws/link", tarfile.SYMTYPE, target),
    )

    message = refusal(archive, tmp_path)

    assert message == f"{archive}: member 'ws/link' links outside the archive (to {target!r})"


def test_it_refuses_a_zip_symlink_pointing_outside(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("private")
    archive = write_zip(
        tmp_path / "results.zip",
        ("ws/ok.json", b"{}"),
        zip_link("ws/link", "../../secret.txt"),
    )

    message = refusal(archive, tmp_path)

    assert (
        message == f"{archive}: member 'ws/link' links outside the archive (to '../../secret.txt')"
    )


def test_it_refuses_a_tar_hardlink_pointing_outside(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("private")
    archive = write_tar(
        tmp_path / "results.tgz", tar_entry("ws/hard", tarfile.LNKTYPE, "../secret.txt")
    )

    message = refusal(archive, tmp_path)

    assert message == f"{archive}: member 'ws/hard' links outside the archive (to '../secret.txt')"


def test_it_refuses_a_link_to_a_directory(tmp_path: Path) -> None:
    # A file "inside" the link is how tar-slip attacks write through one; here it lands in a
    # real directory and the link itself is refused.
    archive = write_tar(
        tmp_path / "results.tgz",
        tar_entry("ws/data", tarfile.DIRTYPE),
        tar_entry("ws/sneaky", tarfile.SYMTYPE, "data"),
        tar_file("ws/sneaky/planted.txt", b"gotcha"),
    )

    message = refusal(archive, tmp_path)

    assert message == (
        f"{archive}: member 'ws/sneaky' links to a directory ('data');"
        " only links to files are supported"
    )


def test_it_refuses_a_link_to_something_not_in_the_archive(tmp_path: Path) -> None:
    archive = write_tar(tmp_path / "results.tgz", tar_entry("ws/dangling", tarfile.SYMTYPE, "nope"))

    message = refusal(archive, tmp_path)

    assert (
        message == f"{archive}: member 'ws/dangling' links to 'nope', which is not in the archive"
    )


def test_it_refuses_a_link_loop(tmp_path: Path) -> None:
    archive = write_tar(
        tmp_path / "results.tgz",
        tar_entry("a", tarfile.SYMTYPE, "b"),
        tar_entry("b", tarfile.SYMTYPE, "a"),
    )

    assert refusal(archive, tmp_path) == f"{archive}: member 'a' is part of a link loop"


@pytest.mark.parametrize(
    ("kind", "described"),
    [
        (tarfile.FIFOTYPE, "a FIFO"),
        (tarfile.CHRTYPE, "a character device"),
        (tarfile.BLKTYPE, "a block device"),
    ],
)
def test_it_refuses_special_tar_members(tmp_path: Path, kind: bytes, described: str) -> None:
    archive = write_tar(
        tmp_path / "results.tgz", tar_file("ws/ok.json", b"{}"), tar_entry("ws/dev", kind)
    )

    assert refusal(archive, tmp_path) == f"{archive}: member 'ws/dev' is {described}; {ALLOWED}"


def test_it_refuses_a_zip_member_whose_mode_says_fifo(tmp_path: Path) -> None:
    info = zipfile.ZipInfo("ws/pipe")
    info.create_system = 3
    info.external_attr = (stat.S_IFIFO | 0o644) << 16
    archive = write_zip(tmp_path / "results.zip", (info, b""))

    assert refusal(archive, tmp_path) == f"{archive}: member 'ws/pipe' is a FIFO; {ALLOWED}"


# --- archives that are too big --------------------------------------------------------------


def test_it_refuses_a_zip_with_too_many_members_before_writing_any(tmp_path: Path) -> None:
    archive = write_zip(tmp_path / "results.zip", *((f"ws/{i}.json", b"{}") for i in range(11)))

    message = refusal(archive, tmp_path, max_files=10)

    assert message == (
        f"{archive}: archive holds more than 10 files (limit EVALSITE_ARCHIVE_MAX_FILES)"
    )
    assert not list((tmp_path / "into").iterdir())


def test_it_refuses_a_tar_with_too_many_members(tmp_path: Path) -> None:
    archive = write_tar(tmp_path / "results.tgz", *(tar_file(f"ws/{i}.json") for i in range(11)))

    message = refusal(archive, tmp_path, max_files=10)

    assert message == (
        f"{archive}: archive holds more than 10 files (limit EVALSITE_ARCHIVE_MAX_FILES)"
    )


def test_it_stops_a_zip_bomb_at_the_byte_limit(tmp_path: Path) -> None:
    archive = tmp_path / "results.zip"
    with (
        zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bomb,
        bomb.open("ws/zeros.bin", "w") as member,
    ):
        for _ in range(50):
            member.write(bytes(MiB))
    assert archive.stat().st_size < MiB

    message = refusal(archive, tmp_path, max_bytes=MiB)

    assert message == (
        f"{archive}: archive expands to more than {MiB} bytes (limit EVALSITE_ARCHIVE_MAX_BYTES)"
    )


def test_it_stops_a_tar_gz_bomb_at_the_byte_limit(tmp_path: Path) -> None:
    archive = tmp_path / "results.tgz"
    info = tarfile.TarInfo("ws/zeros.bin")
    info.size = 50 * MiB
    with tarfile.open(archive, "w:gz") as bomb:
        bomb.addfile(info, io.BufferedReader(Zeros(info.size)))

    message = refusal(archive, tmp_path, max_bytes=MiB)

    assert message == (
        f"{archive}: archive expands to more than {MiB} bytes (limit EVALSITE_ARCHIVE_MAX_BYTES)"
    )


def test_it_does_not_trust_a_zip_header_that_understates_the_size(tmp_path: Path) -> None:
    archive = tmp_path / "results.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bomb:
        bomb.writestr("ws/zeros.bin", bytes(5 * MiB))
    patch_declared_size(archive, "ws/zeros.bin", 10)  # well under the limit, and a lie

    message = refusal(archive, tmp_path, max_bytes=MiB)

    assert message == f"{archive}: corrupt archive: Bad CRC-32 for file 'ws/zeros.bin'"


def test_copies_of_linked_files_count_towards_the_byte_limit(tmp_path: Path) -> None:
    archive = write_tar(
        tmp_path / "results.tgz",
        tar_file("ws/big.bin", bytes(600 * 1024)),
        *(tar_entry(f"ws/copy-{i}.bin", tarfile.LNKTYPE, "ws/big.bin") for i in range(3)),
    )

    message = refusal(archive, tmp_path, max_bytes=MiB)

    assert message == (
        f"{archive}: archive expands to more than {MiB} bytes (limit EVALSITE_ARCHIVE_MAX_BYTES)"
    )


def test_it_refuses_a_tar_header_big_enough_to_exhaust_memory(tmp_path: Path) -> None:
    # tarfile reads a pax header into memory whole; this one carries a 2 MiB file name.
    archive = write_tar(tmp_path / "results.tgz", tar_file("ws/" + "a" * (2 * MiB), b"{}"))

    message = refusal(archive, tmp_path)

    assert message == f"{archive}: corrupt archive: member headers larger than {MiB} bytes"


def patch_declared_size(archive: Path, name: str, size: int) -> None:
    """Rewrite a member's uncompressed size in both the local and the central header."""
    data = bytearray(archive.read_bytes())
    encoded = name.encode()
    local = data.index(b"PK\x03\x04")  # the first and only member
    assert data[local + 30 : local + 30 + len(encoded)] == encoded
    data[local + 22 : local + 26] = struct.pack("<I", size)
    central = data.index(b"PK\x01\x02")
    assert data[central + 46 : central + 46 + len(encoded)] == encoded
    data[central + 24 : central + 28] = struct.pack("<I", size)
    archive.write_bytes(bytes(data))
