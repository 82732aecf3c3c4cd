"""The neuron view: how one head turns one query and one key into a weight, term by term.

Top: q, k and q∘k per dimension (a diverging scale around 0). Bottom: the softmax over the
query's keys, the chosen key in the focus colour and masked keys grey. The title carries the
sum, the division by √d_k and the weight.
"""

from __future__ import annotations

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from viz.labels import position_labels
from viz.style import (
    ALLOWED_COLOR,
    DIVERGING_COLORSCALE,
    FOCUS_COLOR,
    MASKED_COLOR,
    TEMPLATE_JSON,
    left_title,
    title_lines,
)

# Written out: an unvalidated figure sends a scale's name as it is, and Plotly.js knows no "RdBu_r".
SIGNED_COLORSCALE = plotly.colors.get_colorscale(DIVERGING_COLORSCALE)
VALUES_SHOWN_UP_TO = 16  # dimensions; more and the numbers on the cells no longer fit
HEIGHT = 520


def neuron_view(terms, query_tokens, key_tokens, head: int, query: int, key: int) -> go.Figure:
    """Args: terms: a `transformer.analysis.measures.NeuronTerms`; query_tokens, key_tokens: the line's N_q and N_k
    tokens; head, query, key: the pair the terms are of."""
    q_label, k_labels = position_labels(query_tokens)[query], position_labels(key_tokens)
    d_k = len(terms.query)
    vectors = np.stack([terms.query, terms.key, terms.products]).astype(np.float32)  # (3, d_k)
    bound = float(max(np.abs(vectors).max(), 1e-6))
    rows = [f"q ({q_label})", f"k ({k_labels[key]})", "q∘k"]
    dims = [str(d) for d in range(d_k)]
    strip = dict(type="heatmap", x=dims, y=rows, z=vectors, colorscale=SIGNED_COLORSCALE, zmin=-bound, zmax=bound,
                 xaxis="x", yaxis="y", colorbar=dict(title=dict(text="value"), len=0.4, y=1, yanchor="top"),
                 hovertemplate="dimension %{x}<br>%{y}: %{z:.4f}<extra></extra>",
                 **(dict(texttemplate="%{z:.2f}", textfont=dict(size=10)) if d_k <= VALUES_SHOWN_UP_TO else {}))
    masked = np.isnan(terms.logits)
    colours = [MASKED_COLOR if out else FOCUS_COLOR if index == key else ALLOWED_COLOR
               for index, out in enumerate(masked)]
    scaled = np.where(masked, np.nan, terms.logits).astype(np.float32)  # (N_k,)
    bars = dict(type="bar", x=k_labels, y=terms.weights.astype(np.float32), marker=dict(color=colours),
                customdata=scaled, xaxis="x2", yaxis="y2", name="weights",
                hovertemplate=f"query {q_label}<br>key %{{x}}<br>q·k/√{d_k}" + (" + ALiBi bias" if terms.has_bias
                                                                                  else "")
                              + " = %{customdata:.4f}<br>"
                              "weight %{y:.4f}<extra>softmax</extra>")
    blocked = dict(type="scatter", mode="markers", x=[k_labels[i] for i in np.flatnonzero(masked)],
                   y=[0.0] * int(masked.sum()), marker=dict(symbol="x", size=9, color=MASKED_COLOR), xaxis="x2",
                   yaxis="y2", name="masked", hovertemplate="key %{x}<br>masked: weight 0<extra></extra>")
    # a line each step: one line was cut off in a 540 px column (a 1000 px window with the sidebar open) at d_k 256
    steps = [f"Σ q∘k = {terms.logit:.4f}; ÷ √{d_k} = {terms.scaled:.4f}"]
    if terms.has_bias:
        steps.append(f"+ ALiBi bias {terms.bias:+.4f} = {terms.scaled + terms.bias:.4f}")
    pair = f"head {head}, query {q_label} · key {k_labels[key]}"
    title = (f"{pair}: masked (weight 0)" if masked[key] else
             f"{pair}:<br>" + ";<br>".join(steps) + f"; softmax → weight {terms.weights[key]:.4f}")
    top = 30 + 20 * title_lines(title)
    layout = dict(
        title=left_title(title, HEIGHT), height=HEIGHT, margin=dict(t=top, l=110, r=20, b=90), showlegend=False,
        xaxis=dict(type="category", domain=[0, 0.9], anchor="y", title=dict(text="dimension of d_k"),
                   automargin=False),
        yaxis=dict(type="category", domain=[0.66, 1.0], autorange="reversed", automargin=False),
        xaxis2=dict(type="category", domain=[0, 0.9], anchor="y2", tickangle=-45, automargin=False),
        yaxis2=dict(domain=[0.0, 0.46], range=[0, 1], title=dict(text="softmax weight"), automargin=False),
        annotations=[dict(text="grey ×: masked key", x=0.9, y=0.48, xref="paper", yref="paper", showarrow=False,
                          xanchor="right", font=dict(size=11, color=MASKED_COLOR))],
    )
    return go.Figure(data=[strip, bars, blocked], layout={**layout, "template": TEMPLATE_JSON}, _validate=False)
