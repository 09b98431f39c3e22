"""Output files that a failed write never destroys.

Every file a command writes (``agora export``'s CSV or Parquet, a report's ``index.html`` and its
SVG and CSV files, ``profile.html`` / ``profile.csv``, ``agora analyze``'s CSVs) goes through this
module: it is written to a temporary name in the same folder (``.tmp-XXXXXXXX-NAME``, keeping the
name's extension so that writers that infer a format from it still do) and renamed over the
target (:func:`os.replace`, atomic on one file system) only once it is complete. When the write
fails (a full disk, a folder that went away, a writer's own error) the temporary file is removed,
an earlier file of that name stays as it was, byte for byte, and the failure is an
:class:`OutputError` saying, in one line, which file and why: ``could not write
reports/x/index.html: No space left on device``.

Inside :func:`staged` the renames wait for the end of the block: a report or profile whose
fifth figure cannot be written leaves every file of the earlier report in place, not a mix of
old and new files.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Callable, Iterator


class OutputError(OSError):
    """A file could not be written; ``str()`` is the one line to show (``could not write PATH:
    CAUSE``). ``path`` is the file, ``cause`` the error underneath."""

    def __init__(self, path: str | Path, cause: BaseException) -> None:
        reason = (getattr(cause, "strerror", None) or " ".join(str(cause).split()) or type(cause).__name__) if cause is not None else "unknown error"
        super().__init__(getattr(cause, "errno", None), reason)
        self.path = str(path)
        self.cause = cause
        self.filename = self.path

    def __str__(self) -> str:
        return f"could not write {self.path}: {self.strerror}"


class _Stage:
    """The files written inside one :func:`staged` block: (temporary file, target) in order."""

    def __init__(self) -> None:
        self.pending: list[tuple[Path, Path]] = []

    def discard(self) -> None:
        for tmp, _ in self.pending:
            _remove(tmp)
        self.pending.clear()

    def commit(self) -> None:
        """Rename every temporary file over its target, in the order written; a rename that
        fails removes the temporary files not yet renamed and raises :class:`OutputError`."""
        while self.pending:
            tmp, target = self.pending[0]
            try:
                os.replace(tmp, target)
            except OSError as exc:
                self.discard()
                raise OutputError(target, exc) from exc
            self.pending.pop(0)


_STAGE: ContextVar[_Stage | None] = ContextVar("staged_outputs", default=None)


@contextlib.contextmanager
def staged() -> Iterator[None]:
    """Files written through this module inside the block are renamed into place together when
    the block ends without an error; when it raises, every temporary file is removed and no
    earlier file is touched. A block inside another joins the outer one."""
    if _STAGE.get() is not None:
        yield
        return
    stage = _Stage()
    token = _STAGE.set(stage)
    try:
        yield
    except BaseException:
        stage.discard()
        raise
    finally:
        _STAGE.reset(token)
    stage.commit()


def temporary_name(path: Path) -> Path:
    """A fresh name beside ``path`` that keeps its extension (``.tmp-1a2b3c4d-games.csv``)."""
    return path.with_name(f".tmp-{secrets.token_hex(4)}-{path.name}")


def write_with(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Write ``path`` by ``write(temporary_path)`` and rename it into place (at once, or at the
    end of the :func:`staged` block around it); returns ``path``. A failure removes the
    temporary file, leaves an earlier ``path`` whole and raises :class:`OutputError` (an
    ``OSError``); an error that is no ``OSError`` (a writer's own) is raised as it was."""
    target = Path(path)
    tmp = temporary_name(target)
    try:
        write(tmp)
    except OSError as exc:
        _remove(tmp)
        raise OutputError(target, exc) from exc
    except BaseException:
        _remove(tmp)
        raise
    stage = _STAGE.get()
    if stage is not None:
        stage.pending.append((tmp, target))
        return target
    try:
        os.replace(tmp, target)
    except OSError as exc:
        _remove(tmp)
        raise OutputError(target, exc) from exc
    return target


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """:func:`write_with` for text."""

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding=encoding) as f:
            f.write(text)

    return write_with(path, write)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """:func:`write_with` for bytes."""

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(data)

    return write_with(path, write)


def write_csv(df: Any, path: str | Path, **options: Any) -> Path:
    """A dataframe as CSV (``df.to_csv(path, **options)``) through :func:`write_with`."""
    return write_with(path, lambda tmp: df.to_csv(tmp, **options))


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
