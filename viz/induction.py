"""The induction result: one line's next-token loss at every position with its two occurrences shaded, and the
accuracy on each occurrence with groups of heads ablated."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.labels import escape, position_labels
from viz.style import TEMPLATE_JSON, figure, fixed_margins, title_lines, wrap_title

OCCURRENCE_COLOURS = {"first": "rgba(99, 110, 250, 0.15)", "second": "rgba(0, 204, 150, 0.2)"}


def position_loss_figure(tokens, loss, first: int, second: int, size: int, vocabulary: int,
                         title: str = "", fit_px: int | None = None) -> go.Figure:
    """Bars of ``loss`` ``(N - 1,)``: the cross-entropy (nats) of predicting token i + 1 at position i, drawn at the
    predicted token; the segment's occurrences (``first``, ``second``, ``size`` tokens) shaded; log V dashed.
    ``fit_px``: a phone's chart width, the title wrapped to it. Built unvalidated (redrawn by the Ablate radio:
    17 ms of validation a move); the tests compare it with what validation writes."""
    title = wrap_title(title, fit_px)
    labels = position_labels(tokens)
    loss = np.asarray(loss, dtype=np.float64)
    hover = [f"after {escape(tokens[i])} (position {i}) the next token is {escape(tokens[i + 1])}"
             for i in range(len(loss))]
    bars = dict(type="bar", x=labels[1: len(loss) + 1], y=loss, customdata=hover, marker=dict(color="#636efa"),
                hovertemplate="%{customdata}<br>loss %{y:.2f} nats<extra></extra>", name="loss")
    chance = float(np.log(vocabulary))
    shapes, annotations = [], []
    for name, start in (("first", first), ("second", second)):  # the bars start at position 1: bar p - 1 is p
        shapes.append(dict(type="rect", xref="x", yref="y domain", x0=start - 1.5, x1=start + size - 1.5, y0=0, y1=1,
                           fillcolor=OCCURRENCE_COLOURS[name], line=dict(width=0), layer="below"))
        annotations.append(dict(text=f"{name} occurrence", showarrow=False, xref="x", yref="y domain",
                                x=start - 1.5, y=1, xanchor="left", yanchor="top"))
    shapes.append(dict(type="line", xref="x domain", yref="y", x0=0, x1=1, y0=chance, y1=chance,
                       line=dict(color="grey", dash="dash")))
    annotations.append(dict(text=f"chance: log {vocabulary}", showarrow=False, xref="x domain", yref="y", x=1,
                            y=chance, xanchor="right", yanchor="bottom"))
    layout = dict(
        template=TEMPLATE_JSON, shapes=shapes, annotations=annotations, showlegend=False, bargap=0.1,
        title=dict(text=title, x=0, xanchor="left"), height=380 + 20 * (title_lines(title) - 1),
        margin=dict(t=40 + 20 * title_lines(title), l=64, r=10, b=110),
        xaxis=dict(type="category", tickangle=-60, automargin=False, tickfont=dict(size=9),
                   title=dict(text="the token predicted (its position)")),
        yaxis=dict(type="linear", autorange=True, automargin=False, title=dict(text="loss (nats)"),
                   rangemode="tozero"))
    return go.Figure(data=[bars], layout=layout, _validate=False)


def _short(label: str) -> str:
    """A group's label as a bar's: "the previous-token heads" -> "previous-<br>token" (the axis title says heads):
    short enough for four groups side by side on a phone, unrotated."""
    return label.removeprefix("the ").removesuffix(" heads").replace("-", "-<br>")


def ablation_figure(accuracy: dict, groups: dict, labels: dict, lines: int) -> go.Figure:
    """Grouped bars: next-token accuracy on the segment's second and first occurrence (2nd token on) with each group
    of heads ablated. ``accuracy``: ``{group: {"second", "first"}}``; ``groups``: ``{group: ((layer, head), …)}``."""
    names = [_short(labels[group]) for group in accuracy]
    heads = [", ".join(f"L{layer} H{head}" for layer, head in groups[group]) or "none" for group in accuracy]
    fig = figure()
    for occurrence, colour in (("second", "#00cc96"), ("first", "#636efa")):
        fig.add_trace(go.Bar(x=names, y=[accuracy[group][occurrence] for group in accuracy], name=f"{occurrence} "
                             "occurrence", marker_color=colour, customdata=heads,
                             hovertemplate=f"ablated: %{{x}} (%{{customdata}})<br>{occurrence} occurrence: "
                                           f"%{{y:.1%}} of next tokens right over {lines} lines<extra></extra>"))
    fig.update_layout(barmode="group", height=340, legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
                      yaxis=dict(range=[0, 1.02], tickformat=".0%", title="next tokens right"),
                      xaxis=dict(title=dict(text="heads ablated (zeroed)", standoff=4), tickangle=0))
    return fixed_margins(fig, top=70, bottom=80)
