"""The look every figure shares: colour scales, the template, titles, margins and axes."""

from __future__ import annotations

import html

import plotly.colors
import plotly.graph_objects as go

_BLUES = plotly.colors.sequential.Blues  # ColorBrewer Blues, white to dark blue

# Written out, not by name: figures built without validation (panels_figure) send the name as it is,
# and Plotly.js's own "Blues" runs the other way (0 = dark blue, 1 = light grey, close to the masked grey).
WEIGHT_COLORSCALE = [[index / (len(_BLUES) - 1), colour] for index, colour in enumerate(_BLUES)]  # 0 = white
MASKED_COLOR = "#8c8c8c"  # masked cells: solid grey, never a shade of the weight scale
ALLOWED_COLOR = "#2b8cbe"
# A mask's blocked cells: the masked cells' grey (it means the same). Light grey (#f0f0f0) was nearly white on the
# dark theme's page, brighter than the allowed blue.
BLOCKED_COLOR = MASKED_COLOR
# A key the padding mask blocks: sand, apart from the look-ahead's (and every other mask's) grey, the blues and the
# focus orange, on both themes; the lessons name both.
PADDING_COLOR = "#c2a878"
FOCUS_COLOR = "#f28e2b"  # the focused token's row or column: orange, apart from the blues and the grey
DIVERGING_COLORSCALE = "RdBu_r"


def scale_list(name: str) -> list:
    """A named colour scale as the list validation writes: a figure built without validation must not send the name
    (Plotly.js's "RdBu" runs the other way, and it knows no "_r")."""
    return [list(step) for step in go.Heatmap(colorscale=name).colorscale]


DIVERGING_SCALE = scale_list(DIVERGING_COLORSCALE)
# Every figure carries this template (``figure``; panels_figure). Importing Streamlit makes its own template
# Plotly's default, and its colours are placeholders ("#000001" …) that only st.plotly_chart's frontend
# replaces: this app draws with Plotly.react, so every trace without a colour of its own came out black
# (four "dim" lines in one black tangle, an unreadable legend). Colours only: every heatmap names its scale.
TEMPLATE = go.layout.Template(layout=dict(colorway=plotly.colors.qualitative.Plotly))
TEMPLATE_JSON = TEMPLATE.to_plotly_json()  # for figures built without validation

def category_axes(fig: go.Figure, row=None, col=None, reverse_y=True, **kwargs) -> None:
    """Category axes (labels are never merged), query rows from top to bottom."""
    fig.update_xaxes(type="category", tickangle=-45, automargin=True, row=row, col=col, **kwargs)
    fig.update_yaxes(type="category", autorange="reversed" if reverse_y else True, automargin=True,
                     row=row, col=col, **kwargs)


def figure(data=None, layout=None) -> go.Figure:
    """``go.Figure(data, layout)`` with this app's template, whatever Plotly's default is (see TEMPLATE).

    Given at construction, the template costs nothing measurable; set afterwards it is validated again (~2.5 ms).
    """
    return go.Figure(data, layout={"template": TEMPLATE, **(layout or {})})


LONG_TITLE_CHARS = 60  # at Plotly's 17 px a longer title outgrows a 540 px chart (a 1000 px window with the sidebar)


FIRST_LINE_PX = 18  # where a grid's title's first line is centred, from the top of the chart


def left_title(text: str, chart_height: int | None = None) -> dict:
    """A figure title at the top left, above the panels' own titles; a long one (a pooled or cropped view's
    note) in the panel titles' 14 px, so that it fits a narrow chart. ``<br>`` starts a second line.
    ``chart_height``: centre its first line FIRST_LINE_PX from the chart's top, the others below it. (Plotly
    centres a title's first line in the top margin and writes the others below it: three lines ran into the
    panel titles; anchored at its top, it was cut off above.)"""
    long = max(len(html.unescape(line)) for line in text.split("<br>")) > LONG_TITLE_CHARS
    top = dict(yref="container", y=1 - FIRST_LINE_PX / chart_height, yanchor="middle") if chart_height else {}
    return dict(text=text, x=0.0, xanchor="left", **top, **(dict(font=dict(size=14)) if long else {}))


def wrap_title(text: str, width_px: int | None, char_px: float = 8.5) -> str:
    """``text`` with ``<br>`` between words wherever a line would be wider than ``width_px`` (a phone's chart;
    None: as it is). ``char_px``: a character's width at the title's size (8.5 at Plotly's 17 px, to be safe)."""
    if not width_px or not text:
        return text
    most = max(8, int(width_px / char_px))
    lines = []
    for line in text.split("<br>"):
        current = ""
        for word in line.split(" "):
            joined = f"{current} {word}" if current else word
            if current and len(html.unescape(joined)) > most:
                lines.append(current)
                joined = word
            current = joined
        lines.append(current)
    return "<br>".join(lines)


def title_lines(text: str) -> int:
    return text.count("<br>") + 1 if text else 0


def fixed_margins(fig: go.Figure, *, top: int = 40, left: int = 64, right: int = 10, bottom: int = 50) -> go.Figure:
    """Margins sized for numeric tick labels and an axis title, so no axis needs automargin."""
    fig.update_xaxes(automargin=False)
    fig.update_yaxes(automargin=False)
    fig.update_layout(margin=dict(t=top, l=left, r=right, b=bottom))
    return fig


def weight_coloraxis(title="weight", cmax: float = 1.0) -> dict:
    """The fixed 0–1 colour scale every attention figure shares (0 to ``cmax`` for another quantity: a norm)."""
    return dict(colorscale=WEIGHT_COLORSCALE, cmin=0.0, cmax=cmax, colorbar=dict(title=dict(text=title)))
