"""A report's figures are cropped as ``savefig(bbox_inches="tight")`` crops them, in one drawing
instead of two (:func:`agorabench.analysis.plots.tight_svg`): the same size, the same drawing at
the same place in the image, the background over the whole image."""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from agorabench.analysis.plots import tight_svg  # noqa: E402

NUMBER = rb"(-?[0-9.]+)"


def _figure(face: str = "white"):
    fig, ax = plt.subplots(figsize=(3, 2), facecolor=face)
    ax.imshow([[0.0, 1.0], [0.5, 0.25]])
    # labels far longer than the figure is wide: the crop must reach beyond the canvas
    ax.set_yticks([0, 1], ["a very long row label that leaves the canvas", "b"])
    ax.set_title("a title")
    return fig


def _size(svg: bytes) -> tuple[float, float, tuple[float, ...]]:
    m = re.search(rb'<svg [^>]*width="' + NUMBER + rb'pt" height="' + NUMBER + rb'pt" viewBox="' + rb" ".join([NUMBER] * 4) + rb'"', svg)
    assert m, svg[:400]
    return float(m.group(1)), float(m.group(2)), tuple(float(v) for v in m.groups()[2:])


def _axes_corner(svg: bytes) -> tuple[float, float]:
    """Where the axes' frame starts: the first point of the patch drawn in group ``patch_2``."""
    m = re.search(rb'<g id="patch_2">\s*<path d="M ' + NUMBER + b" " + NUMBER, svg)
    assert m, "no axes patch"
    return float(m.group(1)), float(m.group(2))


@pytest.mark.parametrize("face", ["white", "#ffeecc"])
def test_one_drawing_crops_as_the_two_drawing_tight_box(face):
    fig = _figure(face)
    draws = []
    fig.canvas.mpl_connect("draw_event", lambda event: draws.append(1))
    ours = tight_svg(fig)
    assert len(draws) == 1  # savefig(bbox_inches="tight") draws twice
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    theirs = buf.getvalue()
    w, h, (x, y, vw, vh) = _size(ours)
    tw, th, (tx, ty, _, _) = _size(theirs)
    assert (w, h) == pytest.approx((tw, th), abs=1e-3) and (vw, vh) == (w, h) and (tx, ty) == (0, 0)
    assert x < 0  # the long label reaches left of the canvas, and the crop with it
    # the drawing sits at the same place in the image: our coordinates less the box's corner
    ox, oy = _axes_corner(ours)
    assert (ox - x, oy - y) == pytest.approx(_axes_corner(theirs), abs=1e-3)
    # the figure's colour fills the whole box, before anything is drawn
    fill = re.search(rb'<rect x="' + NUMBER + rb'" y="' + NUMBER + rb'" width="' + NUMBER + rb'" height="' + NUMBER + rb'" style="fill: (#[0-9a-f]{6}); fill-opacity: 1"/>\s*<g id="figure_1">', ours)
    assert fill and tuple(float(v) for v in fill.groups()[:4]) == (x, y, vw, vh)
    assert fill.group(5).decode() == matplotlib.colors.to_hex(face)


def test_a_transparent_figure_gets_no_background():
    fig = _figure()
    fig.patch.set_alpha(0.0)
    svg = tight_svg(fig)
    plt.close(fig)
    assert b"<rect" not in svg.split(b'<g id="figure_1">')[0]


def test_a_figure_drawn_again_is_the_same_file():
    """No date and no random element ids: a report made again from the same games is the same."""
    first, second = _figure(), _figure()
    a, b = tight_svg(first), tight_svg(second)
    plt.close(first)
    plt.close(second)
    assert b"clip-path=" in a and b"<dc:date>" not in a
    assert a == b
