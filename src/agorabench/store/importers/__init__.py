"""Importers for the log formats of the original projects. Each turns a folder of logs into
finished games in the store (``source = import:<format>``), with outcomes and metrics computed
by our own game modules, so published data can be analysed with the same reports."""

from __future__ import annotations

import importlib
from pathlib import Path

from ..store import Store

#: format -> "module:function(folder, store, study) -> (games imported, problems)"
IMPORTERS: dict[str, str] = {
    "glee": "agorabench.store.importers.glee:import_glee",
    "govsim": "agorabench.store.importers.govsim:import_govsim",
}


def import_folder(fmt: str, folder: str | Path, store: Store, study: str | None = None) -> tuple[int, list[str]]:
    if fmt not in IMPORTERS:
        raise ValueError(f"unknown import format {fmt!r}; known: {', '.join(IMPORTERS)}")
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"not a folder: {folder}")
    module, func = IMPORTERS[fmt].split(":")
    try:
        importer = getattr(importlib.import_module(module), func)
    except ModuleNotFoundError:
        raise ValueError(f"the {fmt} importer is not available in this version") from None
    return importer(folder, store, study or f"{fmt}_import")
