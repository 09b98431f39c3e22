"""A report's sections: :class:`Section` (a title and its HTML) and :func:`guarded`, which turns
an analysis that cannot be computed on the data into a section saying why."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Callable, Union

import pandas as pd

from .files import OutputError
from .plots import table_html


@dataclass
class Section:
    title: str
    body: str


def not_computed(title: str, exc: BaseException) -> Section:
    """The section of an analysis that failed on this data: its title, the reason in one line,
    and (inside :func:`~agorabench.analysis.plots.artifacts`) a CSV named after it that says so."""
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    link = table_html(pd.DataFrame({"section": [title], "not computed": [reason]}), name=f"{title} not computed")
    return Section(f"{title} (not computed)", f"<p class='note'>Not computed for these games: {html.escape(reason)}</p>" + link)


def guarded(title: str, build: Callable[[], Union[Section, list[Section], None]]) -> list[Section]:
    """The sections ``build`` makes, or one :func:`not_computed` section if it fails: one
    estimate that cannot be made on the data (too few games, no variation, a separated choice)
    never costs the rest of the report."""
    try:
        made = build()
    except OutputError:  # a file of the report could not be written (a full disk): the report fails
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of one analysis is reported in its place
        return [not_computed(title, exc)]
    if made is None:
        return []
    return [made] if isinstance(made, Section) else list(made)


