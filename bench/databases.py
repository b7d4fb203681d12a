"""The benches' throwaway databases: a SQLite file, or a database on the local PostgreSQL.

PostgreSQL databases are created as the `evalsite` role (.ci/run) under a name holding this
process's id, and dropped on the way out, even on error; `db.sqlite3` and the environment's
`DATABASE_URL` are never touched.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.django_process import migrate

DATABASES = ("sqlite", "postgres")
#: The local cluster and the role .ci/run creates; the role may create databases.
POSTGRES = "postgres://evalsite:evalsite@127.0.0.1:5432"


def drop_database(dbname: str, attempts: int = 20) -> None:
    """Drop a bench database, ending its connections.

    FORCE refuses when an autovacuum worker (the superuser's, busy after a large import)
    is on it; a plain DROP ends that worker itself, so it is tried next, a few times.
    """
    import psycopg

    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
        try:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
            return
        except psycopg.errors.InsufficientPrivilege:
            pass
        for attempt in range(attempts):
            try:
                admin.execute(f'DROP DATABASE IF EXISTS "{dbname}"')
                return
            except psycopg.errors.ObjectInUse:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.5)


def _sqlite_file(base: Path, name: str) -> str:
    """A SQLite file under `base`, deleted with its journals; its URL."""
    db = base / f"{name}.sqlite3"
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return f"sqlite:///{db}"


def _create_postgres(dbname: str) -> str:
    import psycopg

    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{dbname}"')
        admin.execute(f'CREATE DATABASE "{dbname}"')
    return f"{POSTGRES}/{dbname}"


@contextlib.contextmanager
def empty_database(kind: str, base: Path, name: str) -> Iterator[str]:
    """A fresh, empty database of `kind` for the duration; yields its DATABASE_URL."""
    if kind == "sqlite":
        yield _sqlite_file(base, name)
        return
    dbname = f"evalsite_bench_{name}_{os.getpid()}"
    url = _create_postgres(dbname)
    try:
        yield url
    finally:
        drop_database(dbname)


class Databases:
    """Fresh, migrated databases of one kind; PostgreSQL ones are dropped by `drop_all`."""

    def __init__(self, kind: str, base: Path):
        self.kind = kind
        self.base = base
        self.created: list[str] = []

    def fresh(self, name: str) -> str:
        """Delete and re-create database `name`, run the migrations (untimed); its URL."""
        if self.kind == "sqlite":
            url = _sqlite_file(self.base, name)
        else:
            dbname = f"evalsite_bench_import_{name}_{os.getpid()}"
            drop_database(dbname)
            url = _create_postgres(dbname)
            if dbname not in self.created:
                self.created.append(dbname)
        migrate(url)
        return url

    def drop_all(self) -> None:
        for dbname in self.created:
            drop_database(dbname)
        self.created.clear()


@contextlib.contextmanager
def databases(kind: str, base: Path) -> Iterator[Databases]:
    """A pool of fresh migrated databases, every PostgreSQL one dropped at the end."""
    pool = Databases(kind, base)
    try:
        yield pool
    finally:
        pool.drop_all()


def server_version(kind: str) -> str:
    if kind == "sqlite":
        return f"SQLite {sqlite3.sqlite_version}"
    import psycopg

    with psycopg.connect(f"{POSTGRES}/postgres") as conn:
        return "PostgreSQL " + conn.execute("SHOW server_version").fetchone()[0].split()[0]


def query(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Every row of `sql` on the database at `url`, over a connection of its own."""
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()
