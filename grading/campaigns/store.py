"""The run store: where a queued run's files go so that every machine can read them.

It is Django's `runs` storage (settings.STORAGES): by default a FileSystemStorage on the
workspace folder (one machine), a shared directory with EVALSITE_RUN_STORE, or any other
storage (django-storages' S3Storage…) with EVALSITE_RUN_STORE_BACKEND. Keys are the
workspace's own paths, `<skill>/iteration-N/eval-…/…`, so a shared directory holds iteration
folders that `importworkspace` reads as they are.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, Storage, storages

from grading.evaluating.folders import ITERATION_DIR

#: Left out of the skill folder a campaign ships to its workers: results and tooling, not skill.
SNAPSHOT_SKIPS = {".git", "node_modules", "__pycache__", ".venv"}


class RunStore:
    def __init__(self, storage: Storage | None = None):
        self.storage = storage or storages["runs"]

    def local_path(self, key: str) -> Path | None:
        """The key as a folder of this machine, when the store is a (shared) filesystem.

        Only FileSystemStorage's paths are real folders (InMemoryStorage's are made up).
        """
        if isinstance(self.storage, FileSystemStorage):
            return Path(self.storage.path(key))
        return None

    def write(self, key: str, content: bytes) -> None:
        """Store `content` at `key`, replacing what was there."""
        if self.storage.exists(key):
            self.storage.delete(key)
        self.storage.save(key, ContentFile(content))

    def read(self, key: str) -> bytes:
        with self.storage.open(key, "rb") as handle:
            return handle.read()

    def listdir(self, key: str) -> tuple[list[str], list[str]]:
        """(folders, files) in the folder `key`; nothing for a missing one. (An object store
        has no folders to test with exists(): a prefix with nothing under it lists empty.)"""
        try:
            return self.storage.listdir(key)
        except (FileNotFoundError, NotADirectoryError):
            return [], []

    def files(self, key: str) -> list[str]:
        """Every file under the folder `key`, as paths relative to it."""
        found: list[str] = []
        pending = [PurePosixPath()]
        while pending:
            relative = pending.pop()
            folders, names = self.listdir(str(PurePosixPath(key) / relative))
            found.extend(str(relative / name) for name in names)
            pending.extend(relative / name for name in folders)
        return sorted(found)

    def put_folder(self, local: Path, key: str) -> None:
        """Copy a local folder's files (not following links) to the folder `key`."""
        if (target := self.local_path(key)) is not None:  # a directory: copy it as one
            shutil.copytree(local, target, ignore=_links, dirs_exist_ok=True)
            return
        for path in sorted(local.rglob("*")):
            if path.is_file() and not path.is_symlink():
                self.write(f"{key}/{path.relative_to(local).as_posix()}", path.read_bytes())

    def get_folder(self, key: str, local: Path) -> None:
        """Copy the folder `key` to a local folder (made if needed)."""
        if (source := self.local_path(key)) is not None:
            if source.is_dir():
                shutil.copytree(source, local, ignore=_links, dirs_exist_ok=True)
            return
        for relative in self.files(key):
            target = local / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with self.storage.open(f"{key}/{relative}", "rb") as source_file:
                target.write_bytes(source_file.read())

    def move_folder(self, key: str, destination: str) -> None:
        """Put the folder `key` at `destination` (replacing it): a rename on a filesystem."""
        source, target = self.local_path(key), self.local_path(destination)
        if source is not None and target is not None:
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
            return
        self.delete_folder(destination)
        for relative in self.files(key):
            self.write(f"{destination}/{relative}", self.read(f"{key}/{relative}"))
        self.delete_folder(key)

    def has_folder(self, key: str) -> bool:
        if (folder := self.local_path(key)) is not None:
            return folder.is_dir()
        return any(self.listdir(key))

    def delete_folder(self, key: str) -> None:
        for relative in self.files(key):
            self.storage.delete(f"{key}/{relative}")
        folder = self.local_path(key)
        if folder is not None and folder.is_dir():
            shutil.rmtree(folder)
            # …and the parents it leaves empty (`.queue/<skill>/`), up to the store itself.
            root = Path(self.storage.path(""))
            for parent in folder.parents:
                if parent == root or not parent.is_relative_to(root) or any(parent.iterdir()):
                    break
                parent.rmdir()

    def iteration_numbers(self, skill: str) -> list[int]:
        """The numbers of the skill's `iteration-N` folders in the store."""
        folders, _ = self.listdir(skill)
        return sorted(int(m.group(1)) for name in folders if (m := ITERATION_DIR.match(name)))


def _links(folder: str, names: list[str]) -> list[str]:
    """copytree's ignore: links are not copied (a run's files are plain files)."""
    return [name for name in names if os.path.islink(os.path.join(folder, name))]


def skill_archive(skill_dir: Path) -> bytes:
    """The skill folder as a .tar.gz, for workers on other machines (results left out)."""

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = PurePosixPath(info.name).parts
        if any(part in SNAPSHOT_SKIPS for part in parts):
            return None
        top = parts[1] if len(parts) > 1 else ""
        if ITERATION_DIR.match(top) or top.endswith("-workspace"):
            return None
        return info if info.isfile() or info.isdir() else None

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(skill_dir, arcname="skill", filter=keep)
    return buffer.getvalue()


def unpack_skill(archive: bytes, destination: Path) -> Path:
    """Unpack `skill_archive` into `destination`; the skill folder's path."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as unpacked:
        unpacked.extractall(destination, filter="data")
    return destination / "skill"
