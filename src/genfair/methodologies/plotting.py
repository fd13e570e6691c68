"""Matplotlib as every report figure uses it: headless, and every text drawn as data.

A label can be a model's text (an OpenBias bias name), a dataset's or a config's, so
matplotlib's mathtext, which reads ``$...$`` as markup and raises on ``gender $x^{$``, is off
(``text.parse_math``), as is LaTeX (``text.usetex``). The settings are made when this module
is imported, before any figure exists, and hold for every text a figure creates later (tick
labels are made while the figure is drawn). Figure modules take ``plt`` from here, never from
matplotlib (``tests/test_model_text_is_data.py`` checks it); what renders a figure (the report,
MLflow) passes it through :func:`as_data` too, for a figure a plugin drew with its own pyplot.
A text genfair's code writes as a formula (an axis label ``$S_{fact}$``) opts in with
:func:`mathtext`; a text holding data never does.
"""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")  # headless: files only
#: text settings of every genfair figure (a label is data, never markup)
DATA_TEXT = {"text.parse_math": False, "text.usetex": False}
matplotlib.rcParams.update(DATA_TEXT)
# a glyph a font lacks is drawn as a box; matplotlib's warning about it would echo the
# character raw (a model's control character) to the terminal
warnings.filterwarnings("ignore", r"Glyph \d+ .* missing from font", UserWarning)

import matplotlib.pyplot as plt  # noqa: E402 - after the backend and text settings
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.layout_engine import PlaceHolderLayoutEngine  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import FixedFormatter, Formatter, FuncFormatter  # noqa: E402

from genfair.logs import shown  # noqa: E402

__all__ = ["DATA_TEXT", "as_data", "laid_out", "mathtext", "one_pass", "plt"]

#: the ``gid`` that marks a text the code wrote as mathtext (:func:`mathtext`)
_MATHTEXT = "genfair-mathtext"


def mathtext(*texts: Text) -> None:
    """Draw ``texts``, which genfair's code wrote (never data), as mathtext."""
    for text in texts:
        text.set_parse_math(True)
        text.set_gid(_MATHTEXT)


def as_data(figure: Figure) -> Figure:
    """``figure`` with every text it holds drawn as data (no mathtext, no LaTeX, format
    characters such as bidi overrides escaped by :func:`genfair.logs.shown`), but those the
    code marked with :func:`mathtext`."""
    for text in figure.findobj(Text):
        if text.get_gid() != _MATHTEXT:
            text.set_parse_math(False)
            text.set_usetex(False)
            if (raw := text.get_text()) != (safe := shown(raw)):
                text.set_text(safe)  # a bidi override or zero-width character, made visible
    for axes in figure.axes:  # tick labels are written again from their formatter at each draw
        for axis in (axes.xaxis, axes.yaxis):
            if isinstance(axis.get_major_formatter(), (FixedFormatter, FuncFormatter)):
                axis.set_major_formatter(_Shown(axis.get_major_formatter()))
            if isinstance(axis.get_minor_formatter(), (FixedFormatter, FuncFormatter)):
                axis.set_minor_formatter(_Shown(axis.get_minor_formatter()))
    return figure


class _Shown(FuncFormatter):
    """A tick-label formatter (labels set from data: ``set_yticklabels(names)``) whose labels
    are shown by :func:`genfair.logs.shown`."""

    def __init__(self, inner: Formatter) -> None:
        super().__init__(lambda x, pos=None: shown(inner(x, pos)))


def laid_out(figure: Figure) -> bool:
    """Whether ``figure``'s code ran its layout: ``fig.tight_layout()`` leaves matplotlib's
    ``PlaceHolderLayoutEngine`` on it, an engine that lays out nothing more."""
    return isinstance(figure.get_layout_engine(), PlaceHolderLayoutEngine)


def one_pass(figure: Figure) -> Figure:
    """``figure`` set to render in one drawing pass. ``savefig`` draws a figure with any
    layout engine once more before it renders (nothing painted, every text laid out again)
    so that the engine can run; ``PlaceHolderLayoutEngine`` (:func:`laid_out`) runs nothing,
    so without it the pixels are the same at less CPU (docs/architecture.md, "Where the CPU
    goes")."""
    if laid_out(figure):
        figure.set_layout_engine(None)
    return figure
