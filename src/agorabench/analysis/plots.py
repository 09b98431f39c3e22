"""Figures as inline SVG ``<img>`` tags, so a report is one self-contained HTML file.

Inside :func:`artifacts` (the report builder opens it on the report's folder) every figure is
also written as an SVG file and every table as a CSV file beside ``index.html``, named after the
figure's title or the table's name, and linked from the caption (through
:mod:`~agorabench.analysis.files`: temporary names renamed into place when the report is whole).

Error bars take whatever interval an estimator gives: an estimate a rounding error outside its
own interval (1.0000000000000009 against an upper end of 1.0) draws a whisker of length 0 on that
side, never a negative one (:func:`whiskers`).
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import re
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Iterator

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .files import staged, write_bytes, write_csv  # noqa: E402
from .reasoning import with_efforts  # noqa: E402


#: Folder receiving SVG/CSV copies and the file names already used there.
_SINK: ContextVar[tuple[Path, set[str]] | None] = ContextVar("report_artifacts", default=None)

#: Model name -> reasoning effort of the report being built (see :func:`efforts_shown`).
_EFFORTS: ContextVar[dict[str, str]] = ContextVar("report_efforts", default={})

#: At most this many lines share one panel; more become small multiples.
MAX_LINES = 8


@contextlib.contextmanager
def artifacts(folder: str | Path) -> Iterator[Path]:
    """Write every figure (SVG) and table (CSV) made inside the block into ``folder``, each to
    a temporary name first: they replace earlier files of their names only when the block ends
    without an error (:func:`~agorabench.analysis.files.staged`, which a report's
    ``index.html`` joins), so a report that fails midway leaves the earlier one whole."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    token = _SINK.set((path, set()))
    try:
        with staged():
            yield path
    finally:
        _SINK.reset(token)


@contextlib.contextmanager
def efforts_shown(found: dict[str, str]) -> Iterator[None]:
    """Inside the block every table made by :func:`table_html` that names models (a ``model``
    or ``model_<role>`` column) gets each one's reasoning effort beside it (``effort``,
    ``effort_<role>``; :func:`~agorabench.analysis.reasoning.with_efforts`), so a reader can
    group by effort; ``found`` empty (no model run with an effort): tables as they are."""
    token = _EFFORTS.set(dict(found))
    try:
        yield
    finally:
        _EFFORTS.reset(token)


def _file(title: str, suffix: str) -> tuple[Path, str] | None:
    sink = _SINK.get()
    if sink is None:
        return None
    folder, used = sink
    stem = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:80] or "item"
    name, k = f"{stem}.{suffix}", 2
    while name in used:
        name, k = f"{stem}-{k}.{suffix}", k + 1
    used.add(name)
    return folder / name, name


_SVG_SIZE = re.compile(rb'<svg ([^>]*?)width="[0-9.]+pt" height="([0-9.]+)pt" viewBox="0 0 [0-9.]+ [0-9.]+"')


def _pt(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _svg(fig, **options) -> bytes:
    """The figure as SVG bytes that depend on the figure alone: no date in the metadata, and
    element ids hashed from their content with a fixed salt (matplotlib's default salt is
    random), so a report made again from the same games is the same file."""
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "agorabench"}):
        fig.savefig(buf, format="svg", metadata={"Date": None}, **options)
    return buf.getvalue()


def tight_svg(fig) -> bytes:
    """The figure as SVG, cropped to the box around everything it draws plus
    ``savefig.pad_inches``, as ``savefig(bbox_inches="tight")`` crops it, but in one drawing
    instead of two: the box is measured when the drawing ends (with the text sizes that drawing
    just computed) and becomes the image's ``viewBox`` (SVG units are points, y downwards); the
    figure's background colour fills the whole box, as it does in the cropped figure."""
    boxes = []
    cid = fig.canvas.mpl_connect("draw_event", lambda event: boxes.append(fig.get_tightbbox(event.renderer)))
    try:
        svg = _svg(fig)
    finally:
        fig.canvas.mpl_disconnect(cid)
    found = _SVG_SIZE.search(svg)
    body = svg.find(b'<g id="figure_1">')
    if not boxes or found is None or body < found.end():  # pragma: no cover - another matplotlib's layout: the two drawings
        return _svg(fig, bbox_inches="tight")
    box = boxes[-1].padded(matplotlib.rcParams["savefig.pad_inches"])
    x, y, w, h = (_pt(v) for v in (box.x0 * 72, float(found.group(2)) - box.y1 * 72, box.width * 72, box.height * 72))
    head = f'<svg {found.group(1).decode()}width="{w}pt" height="{h}pt" viewBox="{x} {y} {w} {h}"'.encode()
    r, g, b, a = fig.get_facecolor()
    fill = f' <rect x="{x}" y="{y}" width="{w}" height="{h}" style="fill: {to_hex((r, g, b))}; fill-opacity: {_pt(a)}"/>\n'.encode() if a > 0 else b""
    return svg[: found.start()] + head + svg[found.end(): body] + fill + svg[body:]


def figure_html(fig, alt: str, note: str = "") -> str:
    """The figure as an inline SVG image (rendered once; also written as a file beside the
    report when one is being written, named after ``alt``) with ``alt`` and ``note`` as its
    caption. The page's stylesheet (:data:`FIGURE_STYLE`) scales the image down to the column;
    when the file is written, the image is a link to it, so a click opens it at full size. The
    image is cropped to everything drawn (:func:`tight_svg`): a legend beside the axes is part
    of it."""
    svg = tight_svg(fig)
    plt.close(fig)
    link = ""
    data = base64.b64encode(svg).decode()
    img = f'<img alt="{html.escape(alt)}" src="data:image/svg+xml;base64,{data}">'
    target = _file(alt, "svg")
    if target is not None:
        write_bytes(target[0], svg)
        href = html.escape(target[1])
        link = f' <a href="{href}">SVG</a>'
        img = f'<a class="full" href="{href}" target="_blank" rel="noopener" title="open the figure at full size">{img}</a>'
    alt = html.escape(alt)
    note = f" <span class='scale'>{html.escape(note)}</span>" if note else ""
    return f'<figure>{img}<figcaption>{alt}{note}{link}</figcaption></figure>'


#: The stylesheet rules every page that shows figures includes: an image never wider than its
#: column (scaled, keeping its shape; the click opens it at full size) and a wide table that
#: scrolls inside its own box instead of widening the page.
FIGURE_STYLE = """
figure{display:inline-block;margin:.5em;max-width:100%;vertical-align:top;box-sizing:border-box}
figure img{display:block;max-width:100%;height:auto}
figure a.full{display:block;cursor:zoom-in}
table.data{display:block;max-width:100%;overflow-x:auto}
"""


#: Colour maps that diverge from a centre; a signed scale uses :data:`DIVERGING` unless given one of these.
DIVERGING_MAPS = {"RdBu", "RdBu_r", "coolwarm", "bwr", "seismic", "PiYG", "PRGn", "BrBG", "PuOr", "RdGy", "RdYlBu"}
DIVERGING = "RdBu"


def colour_scale(values: np.ndarray, vmin: float | None = 0.0, vmax: float | None = 1.0, cmap: str = "viridis") -> tuple[float, float, str, bool]:
    """The colour scale of a heatmap: (low, high, colour map, diverging). The scale covers the
    stated range [vmin, vmax] (None: the values' own end) and every value; when it runs from
    below 0 to above 0 (a signed metric) it is diverging and centred at 0: ±max(|low|, |high|)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    lo = min([v for v in (vmin, finite.min() if finite.size else None) if v is not None], default=0.0)
    hi = max([v for v in (vmax, finite.max() if finite.size else None) if v is not None], default=1.0)
    if lo < 0 < hi:
        top = max(-lo, hi)
        return (-top, top, cmap if cmap in DIVERGING_MAPS else DIVERGING, True)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return (float(lo), float(hi), cmap, cmap in DIVERGING_MAPS)


def heatmap(table: pd.DataFrame, title: str, vmin: float | None = 0.0, vmax: float | None = 1.0, fmt: str = "{:.2f}", cmap: str = "viridis", colorbar: str = "") -> str:
    """A matrix (rows × columns) as a coloured grid with the values written in the cells;
    ``vmin``/``vmax``: the metric's range (None: the values' own), widened to cover every
    value, diverging and centred at 0 for a signed metric (:func:`colour_scale`); ``colorbar``
    labels the colour scale (with its unit). The caption states the scale."""
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * max(1, table.shape[1]), 1.0 + 0.6 * max(1, table.shape[0])))
    values = table.to_numpy(dtype=float)
    lo, hi, cmap, diverging = colour_scale(values, vmin, vmax, cmap)
    im = ax.imshow(values, vmin=lo, vmax=hi, cmap=cmap, aspect="auto")
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=45, ha="right")
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index])
    ax.set_xlabel(table.columns.name or "")
    ax.set_ylabel(table.index.name or "")
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if np.isfinite(values[i, j]):
                pos = (values[i, j] - lo) / (hi - lo)
                dark = abs(pos - 0.5) > 0.3 if diverging else pos < 0.5  # diverging maps are dark at both ends
                ax.text(j, i, fmt.format(values[i, j]), ha="center", va="center", color="white" if dark else "black", fontsize=8)
    bar = fig.colorbar(im, ax=ax)
    if colorbar:
        bar.set_label(colorbar)
    ax.set_title(title)
    scale = f"(colour scale {number(lo)} to {number(hi)}" + (", diverging, centred at 0)" if diverging and lo == -hi else ")")
    return figure_html(fig, title, scale)


def whiskers(est, low, high) -> np.ndarray:
    """Error-bar lengths (2 × n: below, above) of estimates ``est`` with interval ends ``low``
    and ``high``, as matplotlib's ``xerr`` / ``yerr`` want them: never negative (an estimate a
    rounding error outside its own interval, or an interval cut to a range, draws no whisker on
    that side) and 0 where an end or the estimate is unknown."""
    e = np.asarray(pd.to_numeric(pd.Series(np.asarray(est, dtype=object)), errors="coerce"), dtype=float)
    lo = np.asarray(pd.to_numeric(pd.Series(np.asarray(low, dtype=object)), errors="coerce"), dtype=float)
    hi = np.asarray(pd.to_numeric(pd.Series(np.asarray(high, dtype=object)), errors="coerce"), dtype=float)
    with np.errstate(invalid="ignore"):
        below, above = np.nan_to_num(e - lo, nan=0.0, posinf=0.0, neginf=0.0), np.nan_to_num(hi - e, nan=0.0, posinf=0.0, neginf=0.0)
    return np.vstack([np.clip(below, 0.0, None), np.clip(above, 0.0, None)])


def bars_with_ci(summary: pd.DataFrame, group: str, title: str, ylabel: str = "", xlabel: str = "") -> str:
    """Grouped bars from a long summary (group, metric, mean, low, high) with CI whiskers."""
    groups = list(dict.fromkeys(summary[group]))
    metrics = list(dict.fromkeys(summary["metric"]))
    width = 0.8 / max(1, len(metrics))
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(groups) * max(1, len(metrics)) * 0.5 + 2), 3.5))
    for k, metric in enumerate(metrics):
        sub = summary[summary["metric"] == metric].set_index(group).reindex(groups)
        x = np.arange(len(groups)) + k * width
        err = whiskers(sub["mean"], sub["low"], sub["high"])
        ax.bar(x, sub["mean"].to_numpy(), width, yerr=err, capsize=3, label=metric)
    ax.set_xticks(np.arange(len(groups)) + width * (len(metrics) - 1) / 2, groups, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    ax.set_title(title)
    return figure_html(fig, title)


def stacked_shares(table: pd.DataFrame, title: str, xlabel: str = "") -> str:
    """Rows as stacked bars of shares (each row sums to 1)."""
    fig, ax = plt.subplots(figsize=(max(4, 0.8 * len(table) + 2), 3.2))
    bottom = np.zeros(len(table))
    for col in table.columns:
        vals = table[col].to_numpy(dtype=float)
        ax.bar([str(i) for i in table.index], vals, bottom=bottom, label=str(col))
        bottom += vals
    ax.set_ylim(0, 1)
    ax.set_ylabel("share")
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    ax.set_title(title)
    return figure_html(fig, title)


def lines(df: pd.DataFrame, x: str, y: str, hue: str, title: str, ylabel: str = "", ylim: tuple[float, float] | None = None, xlabel: str = "") -> str:
    """One line per ``hue`` value; more than :data:`MAX_LINES` lines are split over panels
    (small multiples sharing the axes), each with its legend beside it."""

    def draw(ax, sub: pd.DataFrame, label: str, colour: str) -> None:
        ax.plot(sub[x], sub[y], marker="o", color=colour, label=label)

    return _small_multiples(df, x, hue, title, ylabel or y, xlabel, ylim, 3.2, draw)


def _small_multiples(df: pd.DataFrame, x: str, group: str, title: str, ylabel: str, xlabel: str, ylim: tuple[float, float] | None, height: float, draw: Callable) -> str:
    """The groups of ``df`` drawn by ``draw(ax, rows, label, colour)``, at most :data:`MAX_LINES`
    per panel; panels stacked, sharing the axes, each with its legend beside it."""
    keys = list(dict.fromkeys(df[group]))
    panels = [keys[i : i + MAX_LINES] for i in range(0, len(keys), MAX_LINES)] or [[]]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, height * len(panels)), sharex=True, sharey=True, squeeze=False)
    for ax, members in zip(axes[:, 0], panels):
        for i, key in enumerate(members):
            draw(ax, df[df[group] == key].sort_values(x), str(key), f"C{i % 10}")
        ax.set_ylabel(ylabel)
        if ylim:
            ax.set_ylim(*ylim)
        if members:
            ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left", title=group)
    axes[-1, 0].set_xlabel(xlabel or x)
    _integer_ticks(axes[-1, 0], df[x])
    axes[0, 0].set_title(title)
    return figure_html(fig, title)


def _integer_ticks(ax, values: pd.Series) -> None:
    """Whole-number ticks on the x axis when every x value is a whole number (months, scenes)."""
    xs = pd.to_numeric(values, errors="coerce")
    if len(xs) and xs.notna().all() and (xs % 1 == 0).all():
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def bands(df: pd.DataFrame, x: str, y: str, group: str, title: str, ylabel: str, xlabel: str = "", step: bool = False, ylim: tuple[float, float] | None = None, low: str = "low", high: str = "high") -> str:
    """One line per ``group`` value with its ``low``–``high`` band (``step``: a step function,
    e.g. a Kaplan–Meier curve); more than :data:`MAX_LINES` groups are split over panels
    (small multiples sharing the axes), each with its legend beside it."""

    def draw(ax, sub: pd.DataFrame, label: str, colour: str) -> None:
        lo, hi = sub[low].astype(float), sub[high].astype(float)
        if step:
            ax.step(sub[x], sub[y], where="post", color=colour, label=label)
            ax.fill_between(sub[x], lo, hi, step="post", color=colour, alpha=0.2)
        else:
            ax.plot(sub[x], sub[y], color=colour, marker="o", label=label)
            ax.fill_between(sub[x], lo, hi, color=colour, alpha=0.2)

    return _small_multiples(df, x, group, title, ylabel, xlabel, ylim, 3.4, draw)


def number(value: float | None, digits: int = 3) -> str:
    """One number format for every estimate and bound: fixed ``digits`` decimals with thousands
    separators, no scientific notation and no "−0.000" (values that round to 0 show as 0)."""
    if value is None or not np.isfinite(value):
        return "–"
    text = f"{float(value):,.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def with_interval(est: float, low: float, high: float, digits: int = 3) -> str:
    """"estimate [low, high]" in :func:`number`'s format (the interval left out when unknown)."""
    if est is None or not np.isfinite(est):
        return "–"
    text = number(est, digits)
    if low is not None and high is not None and np.isfinite(low) and np.isfinite(high):
        text += f" [{number(low, digits)}, {number(high, digits)}]"
    return text


def table_html(df: pd.DataFrame, floatfmt: str = "{:.3f}", *, name: str, note: str = "") -> str:
    """An HTML table (``note`` above it); inside :func:`artifacts` also a CSV file named after
    ``name``, the table's title (every table has one: no file is called ``table.csv``). Inside
    :func:`efforts_shown`, models' reasoning efforts are added beside their names."""
    df = with_efforts(df, _EFFORTS.get())
    link = ""
    target = _file(name, "csv")
    if target is not None:
        write_csv(df, target[0], index=False)
        link = f'<p class="note">Table as <a href="{html.escape(target[1])}">CSV</a>.</p>'
    head = f"<p class='note'>{note}</p>" if note else ""
    return head + df.to_html(index=False, float_format=lambda v: floatfmt.format(v), na_rep="–", classes="data", border=0) + link


def grid_table(long: pd.DataFrame, index: str | list[str], *, name: str, column: str | list[str] = "metric", est: str = "mean", low: str = "low", high: str = "high", note: str = "") -> str:
    """A long table (one row per group and metric) shown as the grid a paper prints: one row per
    ``index`` group, one column per ``column`` value (several columns: their values joined by
    ": "), cells "estimate [low, high]"; both forms are written as CSV (``NAME (wide)`` and
    ``NAME``), the long one shown folded below."""
    keys = [index] if isinstance(index, str) else list(index)
    heads = [column] if isinstance(column, str) else list(column)
    cells = long.assign(_cell=[with_interval(e, lo, hi) for e, lo, hi in zip(long[est], long[low], long[high])])
    cells["_head"] = cells[heads].astype(str).agg(": ".join, axis=1)
    wide = cells.pivot_table(index=keys, columns="_head", values="_cell", aggfunc="first", sort=False)
    wide = wide.reindex(columns=list(dict.fromkeys(cells["_head"]))).fillna("–").reset_index()
    wide.columns.name = None
    folded = f"<details><summary>Long form (one row per {html.escape(', '.join(keys + heads))})</summary>" + table_html(long, name=name) + "</details>"
    return table_html(wide, name=f"{name} (wide)", note=note) + folded


def forest(df: pd.DataFrame, label: str, panel: str, title: str, xlabel: str, est: str = "estimate", low: str = "low", high: str = "high", ref: float | None = 0.0) -> str:
    """Estimates with interval whiskers, one row per ``label`` and one panel per ``panel`` value
    (e.g. outcome, role or measure; each panel its own x axis), a dashed line at ``ref`` (the
    reference; None: no line). The figure is at least 2 inches high: with one or two rows the
    titles and the axis label would not fit and the layout would be left undone."""
    panels = list(dict.fromkeys(df[panel]))
    labels = list(dict.fromkeys(df[label]))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels) + 2.5, max(2.0, 0.8 + 0.32 * len(labels))), sharey=True, squeeze=False)
    y = np.arange(len(labels))[::-1]
    for ax, key in zip(axes[0], panels):
        sub = df[df[panel] == key].set_index(label).reindex(labels)
        e = sub[est].to_numpy(dtype=float)
        err = whiskers(e, sub[low], sub[high])
        ax.errorbar(e, y, xerr=err, fmt="o", color="#1f4e79", ecolor="#7fa7cf", capsize=3, markersize=4)
        if ref is not None:
            ax.axvline(ref, color="#999", linestyle="--", linewidth=1)
        ax.set_title(str(key), fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_yticks(y, [str(v) for v in labels])
    fig.suptitle(title)
    fig.tight_layout()
    return figure_html(fig, title)


def histograms(values: dict[str, pd.Series], title: str, xlabel: str, bins: int = 30) -> str:
    """One histogram panel per named series (small multiples, counts on the y axis)."""
    names = [k for k, v in values.items() if len(v)]
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(3.4 * max(1, len(names)) + 0.5, 3), squeeze=False)
    for ax, name in zip(axes[0], names):
        ax.hist(values[name].to_numpy(dtype=float), bins=bins, color="#4a7ab0")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("messages")
    fig.suptitle(title)
    fig.tight_layout()
    return figure_html(fig, title)
