"""A throwaway PostgreSQL server for tests: Debian's binaries, a data directory in a temp folder,
listening on 127.0.0.1 and a socket in that folder only. ``initdb`` and the server refuse to run
as root, so as root they run as the ``postgres`` user."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def pg_bin(name: str) -> str | None:
    """Path of a PostgreSQL program (PATH first, then Debian's versioned folders)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """``start()`` it, ask it for fresh databases with :meth:`new_database`, ``stop()`` it."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="agora-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self._n = 0
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            self._as_user = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.dir, "postgres")

    def _run(self, *cmd: str) -> None:
        subprocess.run([*self._as_user, *cmd], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=self.dir)

    def start(self) -> "PostgresServer":
        initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
        if not initdb or not pg_ctl:
            raise FileNotFoundError("PostgreSQL's initdb/pg_ctl not found (scripts/setup.sh installs Debian's postgresql)")
        self._run(initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale")
        opts = f"-k {self.dir} -h 127.0.0.1 -p {self.port} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(pg_ctl, "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"), "-w", "-t", "60", "start")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A new empty database; its SQLAlchemy URL."""
        import psycopg

        self._n += 1
        name = f"t{self._n}_{int(time.time() * 1000) % 100000}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        pg_ctl = pg_bin("pg_ctl")
        if pg_ctl and (self.data / "postmaster.pid").exists():
            subprocess.run([*self._as_user, pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)
