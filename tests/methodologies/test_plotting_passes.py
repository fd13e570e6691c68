"""How ``track`` and ``report`` render a figure (genfair.methodologies.plotting.one_pass,
genfair.study.report.figure_png): a figure its code laid out is drawn once and its pixels are
those matplotlib's default save gives; any other figure is still cropped to what it holds."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import pytest

from genfair.methodologies.plotting import laid_out, one_pass, plt
from genfair.study.report import figure_png


def _figure(tight: bool) -> Any:
    fig, axes = plt.subplots(1, 2, figsize=(4, 2))
    for ax in axes:
        ax.plot([0, 1], [1, 0], label="a model")
        ax.set(title="panel", xlabel="x", ylabel="y")
        ax.legend()
    fig.suptitle("title")
    if tight:
        fig.tight_layout()
    return fig


@pytest.fixture
def draws(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The number of whole-figure draws, counted."""
    from matplotlib.figure import Figure

    count = [0]
    draw = Figure.draw

    def counted(self: Any, renderer: Any) -> None:
        count[0] += 1
        draw(self, renderer)

    monkeypatch.setattr(Figure, "draw", counted)
    yield count


def _png(fig: Any, **kwargs: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **kwargs)
    plt.close(fig)
    return buffer.getvalue()


def test_a_laid_out_figure_is_drawn_once_with_the_same_pixels(draws: list[int]) -> None:
    before = draws[0]
    plain = _png(_figure(tight=True))
    assert draws[0] - before == 2  # matplotlib's pre-draw for the placeholder layout engine
    fig = _figure(tight=True)
    assert laid_out(fig)
    before = draws[0]
    fast = _png(one_pass(fig))
    assert draws[0] - before == 1
    assert fast == plain


def test_a_figure_nobody_laid_out_is_left_as_it_is() -> None:
    fig = _figure(tight=False)
    assert not laid_out(fig)
    assert one_pass(fig).get_layout_engine() is None
    plt.close(fig)


def _size(png: str) -> tuple[int, int]:
    data = base64.b64decode(png)
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_report_saves_a_laid_out_figure_whole_in_one_draw_and_crops_any_other(
    draws: list[int],
) -> None:
    before = draws[0]
    whole = figure_png(_figure(tight=True), dpi=50)
    assert draws[0] - before == 1
    assert _size(whole) == (200, 100)  # the figure's 4 x 2 inches at 50 dpi
    before = draws[0]
    cropped = figure_png(_figure(tight=False), dpi=50)
    assert draws[0] - before == 2  # bbox_inches="tight": a pre-draw for its box, then the draw
    assert _size(cropped) != (200, 100)
