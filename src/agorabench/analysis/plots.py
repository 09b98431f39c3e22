"""Figures as inline PNG ``<img>`` tags, so a report is one self-contained HTML file.

Inside :func:`artifacts` (the report builder opens it on the report's folder) every figure is
also written as an SVG file and every table as a CSV file beside ``index.html``, named after the
figure's title or the table's name, and linked from the caption.
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
from matplotlib.ticker import MaxNLocator  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


#: Folder receiving SVG/CSV copies and the file names already used there.
_SINK: ContextVar[tuple[Path, set[str]] | None] = ContextVar("report_artifacts", default=None)

#: At most this many lines share one panel; more become small multiples.
MAX_LINES = 8


@contextlib.contextmanager
def artifacts(folder: str | Path) -> Iterator[Path]:
    """Write every figure (SVG) and table (CSV) made inside the block into ``folder``."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    token = _SINK.set((path, set()))
    try:
        yield path
    finally:
        _SINK.reset(token)


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


def figure_html(fig, alt: str) -> str:
    """The figure as an inline SVG image (rendered once; also written as a file beside the
    report when one is being written) with ``alt`` as its caption."""
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = buf.getvalue()
    link = ""
    target = _file(alt, "svg")
    if target is not None:
        target[0].write_bytes(svg)
        link = f' <a href="{html.escape(target[1])}">SVG</a>'
    data = base64.b64encode(svg).decode()
    alt = html.escape(alt)
    return f'<figure><img alt="{alt}" src="data:image/svg+xml;base64,{data}"><figcaption>{alt}{link}</figcaption></figure>'


def heatmap(table: pd.DataFrame, title: str, vmin: float | None = 0.0, vmax: float | None = 1.0, fmt: str = "{:.2f}", cmap: str = "viridis", colorbar: str = "") -> str:
    """A matrix (rows × columns) as a coloured grid with the values written in the cells;
    ``colorbar`` labels the colour scale (with its unit)."""
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * max(1, table.shape[1]), 1.0 + 0.6 * max(1, table.shape[0])))
    values = table.to_numpy(dtype=float)
    im = ax.imshow(values, vmin=vmin, vmax=vmax, cmap=cmap, aspect="auto")
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=45, ha="right")
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index])
    ax.set_xlabel(table.columns.name or "")
    ax.set_ylabel(table.index.name or "")
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if np.isfinite(values[i, j]):
                lo = vmin if vmin is not None else np.nanmin(values)
                hi = vmax if vmax is not None else np.nanmax(values)
                pos = (values[i, j] - lo) / (hi - lo) if hi > lo else 0.5
                dark = pos < 0.5 if cmap == "viridis" else abs(pos - 0.5) > 0.3  # diverging maps are dark at both ends
                ax.text(j, i, fmt.format(values[i, j]), ha="center", va="center", color="white" if dark else "black", fontsize=8)
    bar = fig.colorbar(im, ax=ax)
    if colorbar:
        bar.set_label(colorbar)
    ax.set_title(title)
    return figure_html(fig, title)


def bars_with_ci(summary: pd.DataFrame, group: str, title: str, ylabel: str = "", xlabel: str = "") -> str:
    """Grouped bars from a long summary (group, metric, mean, low, high) with CI whiskers."""
    groups = list(dict.fromkeys(summary[group]))
    metrics = list(dict.fromkeys(summary["metric"]))
    width = 0.8 / max(1, len(metrics))
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(groups) * max(1, len(metrics)) * 0.5 + 2), 3.5))
    for k, metric in enumerate(metrics):
        sub = summary[summary["metric"] == metric].set_index(group).reindex(groups)
        x = np.arange(len(groups)) + k * width
        err = np.vstack([(sub["mean"] - sub["low"]).fillna(0).to_numpy(), (sub["high"] - sub["mean"]).fillna(0).to_numpy()])
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


def table_html(df: pd.DataFrame, floatfmt: str = "{:.3f}", name: str = "table") -> str:
    """An HTML table; inside :func:`artifacts` also a CSV file named after ``name``."""
    link = ""
    target = _file(name, "csv")
    if target is not None:
        df.to_csv(target[0], index=False)
        link = f'<p class="note">Table as <a href="{html.escape(target[1])}">CSV</a>.</p>'
    return df.to_html(index=False, float_format=lambda v: floatfmt.format(v), na_rep="–", classes="data", border=0) + link


def forest(df: pd.DataFrame, label: str, panel: str, title: str, xlabel: str, est: str = "estimate", low: str = "low", high: str = "high") -> str:
    """Estimates with interval whiskers, one row per ``label`` and one panel per ``panel`` value
    (e.g. outcome or role), a dashed line at 0 (the reference)."""
    panels = list(dict.fromkeys(df[panel]))
    labels = list(dict.fromkeys(df[label]))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels) + 2.5, 0.8 + 0.32 * len(labels)), sharey=True, squeeze=False)
    y = np.arange(len(labels))[::-1]
    for ax, key in zip(axes[0], panels):
        sub = df[df[panel] == key].set_index(label).reindex(labels)
        e = sub[est].to_numpy(dtype=float)
        err = np.vstack([e - sub[low].to_numpy(dtype=float), sub[high].to_numpy(dtype=float) - e])
        ax.errorbar(e, y, xerr=np.nan_to_num(err), fmt="o", color="#1f4e79", ecolor="#7fa7cf", capsize=3, markersize=4)
        ax.axvline(0, color="#999", linestyle="--", linewidth=1)
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
