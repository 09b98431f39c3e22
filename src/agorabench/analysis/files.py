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

Every CSV is safe to open in a spreadsheet (:func:`spreadsheet_safe`: a text cell that would
run as a formula gets a leading ``'``, NUL characters are dropped).

A command's own inputs are never an output: inside :func:`protecting` a target that resolves
(symlinks followed, hard links compared) to one of the given files is refused before anything
is written, and so is, always, a target that already holds an SQLite database or its write-ahead
log (a cache database, a database of another study): ``--out runs/x.db`` never replaces it.
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
_PROTECTED: ContextVar[tuple[Path, ...]] = ContextVar("protected_inputs", default=())

#: The first bytes of an SQLite database file and of its write-ahead log (two byte orders).
_SQLITE_MAGIC = (b"SQLite format 3\x00", b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")


def sqlite_companions(db: str | Path) -> list[Path]:
    """A SQLite database file and the files SQLite keeps beside it (``-wal``, ``-shm``,
    ``-journal``)."""
    path = Path(db)
    return [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]


def _same(a: Path, b: Path) -> bool:
    """Whether two paths name one file: equal once resolved, or one inode (a hard link)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refusal(path: str | Path, inputs: Any = ()) -> str | None:
    """Why ``path`` may not be written (None: it may): it is one of ``inputs`` (paths, each with
    a word saying what it is, as ``(path, what)`` pairs) or of the files protected by
    :func:`protecting`, or it already holds an SQLite database or write-ahead log."""
    target = Path(path)
    for item in [*inputs, *((p, "an input of this command") for p in _PROTECTED.get())]:
        other, what = item if isinstance(item, tuple) else (item, "an input of this command")
        if _same(target, Path(other)):
            return f"it is {what} ({other})"
    try:
        with open(target, "rb") as f:
            head = f.read(16)
    except OSError:
        return None
    if head.startswith(_SQLITE_MAGIC):
        return "it holds an SQLite database (or its log); give another file name"
    return None


@contextlib.contextmanager
def protecting(paths: Any) -> Iterator[None]:
    """Inside the block, a write whose target is one of ``paths`` (a command's database, its
    ``-wal`` / ``-shm``, the study file) raises :class:`OutputError` before anything is written."""
    token = _PROTECTED.set((*_PROTECTED.get(), *(Path(p) for p in paths)))
    try:
        yield
    finally:
        _PROTECTED.reset(token)


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
    why = refusal(target)
    if why:
        raise OutputError(target, ValueError(f"refused, {why}"))
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


#: What makes a spreadsheet read a cell as a formula (OWASP's list for CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _plain_number(text: str) -> bool:
    """Whether ``text`` is only a number (``-3``, ``+1.5e3``): a spreadsheet reads it as one."""
    try:
        float(text)
    except ValueError:
        return False
    return "_" not in text and text.strip() == text


def safe_cell(value: Any) -> Any:
    """One cell as a CSV file of this package holds it (:func:`spreadsheet_safe`'s rule): text
    without NUL, with a leading ``'`` when a spreadsheet would read it as a formula; anything
    that is not text, and text that is only a number, as it is."""
    if not isinstance(value, str):
        return value
    if "\x00" in value:
        value = value.replace("\x00", "")
    if value.startswith(FORMULA_STARTS) and not _plain_number(value):
        return "'" + value
    return value


def _safe_labels(labels: Any) -> Any:
    """Column names or index values (a pandas ``Index``, possibly of tuples) under :func:`safe_cell`."""
    import pandas as pd

    if isinstance(labels, pd.MultiIndex):
        return pd.MultiIndex.from_tuples([tuple(safe_cell(v) for v in t) for t in labels], names=labels.names)
    if labels.dtype == object or isinstance(labels.dtype, pd.StringDtype):
        return pd.Index([safe_cell(v) for v in labels], name=labels.name, dtype=labels.dtype)
    return labels


def spreadsheet_safe(df: Any) -> Any:
    """``df`` as a CSV file of this package holds it (``agora export``'s tables, a report's
    tables, ``agora analyze``'s and ``agora profile``'s CSVs: :func:`write_csv` applies it): a
    text cell that a spreadsheet would read as a formula (it starts with ``=``, ``+``, ``-``,
    ``@``, a tab or a carriage return) gets a leading ``'``, as OWASP recommends, and NUL
    characters are dropped; so do text column names and index values. Numbers stay numbers: a
    number column is untouched and a text cell that is only a number (``-3``) is kept as it is.
    The Parquet export keeps every raw value."""
    import pandas as pd

    out = df.copy()
    for i in range(out.shape[1]):
        stored = out.iloc[:, i]
        if stored.dtype == object or isinstance(stored.dtype, pd.StringDtype):
            cells = [safe_cell(v) for v in stored]  # a cell's type is kept: map would infer a dtype (1 -> 1.0)
            out.iloc[:, i] = pd.Series(cells, index=stored.index, dtype=stored.dtype)
    out.columns = _safe_labels(out.columns)
    out.index = _safe_labels(out.index)
    return out


def write_csv(df: Any, path: str | Path, **options: Any) -> Path:
    """A dataframe as CSV (``df.to_csv(path, **options)``) through :func:`write_with`, its cells
    made safe for spreadsheets first (:func:`spreadsheet_safe`): every CSV of a report, an
    analysis, a profile or an export."""
    frame = spreadsheet_safe(df)
    return write_with(path, lambda tmp: frame.to_csv(tmp, **options))


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
