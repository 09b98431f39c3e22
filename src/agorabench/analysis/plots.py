"""Figures as inline PNG ``<img>`` tags, so a report is one self-contained HTML file."""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def figure_html(fig, alt: str) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    return f'<figure><img alt="{alt}" src="data:image/png;base64,{data}"><figcaption>{alt}</figcaption></figure>'


def heatmap(table: pd.DataFrame, title: str, vmin: float | None = 0.0, vmax: float | None = 1.0, fmt: str = "{:.2f}", cmap: str = "viridis") -> str:
    """A matrix (rows × columns) as a coloured grid with the values written in the cells."""
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
                ax.text(j, i, fmt.format(values[i, j]), ha="center", va="center", color="white" if values[i, j] < ((vmin or 0) + (vmax or 1)) / 2 else "black", fontsize=8)
    fig.colorbar(im, ax=ax)
    ax.set_title(title)
    return figure_html(fig, title)


def bars_with_ci(summary: pd.DataFrame, group: str, title: str, ylabel: str = "") -> str:
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
    ax.legend(fontsize=8)
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


def lines(df: pd.DataFrame, x: str, y: str, hue: str, title: str, ylabel: str = "", ylim: tuple[float, float] | None = None) -> str:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for key, sub in df.groupby(hue):
        sub = sub.sort_values(x)
        ax.plot(sub[x], sub[y], marker="o", label=str(key))
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel or y)
    if ylim:
        ax.set_ylim(*ylim)
    ax.legend(fontsize=8)
    ax.set_title(title)
    return figure_html(fig, title)


def table_html(df: pd.DataFrame, floatfmt: str = "{:.3f}") -> str:
    return df.to_html(index=False, float_format=lambda v: floatfmt.format(v), na_rep="–", classes="data", border=0)
