"""The Query–key page's view of one head (`transformer.live.query_key`): its controls, the scatter, and a click
on a query that opens it, focused, on the Attention page."""

from __future__ import annotations

import streamlit as st

from ui import data, state
from ui.controls import PERSIST, clamp, plot
from ui.pages import Page
from ui.state import F
from ui.text import percent
from viz.query_key import COLOURINGS, query_key_figure

COLOUR_LABELS = {"position": "position", "token": "token", "side": "query / key"}


@st.fragment  # a head or colour change reruns this section alone, not the role grids above it
def query_key_section(config, stack: str, layers: int, heads: int, lines_state: dict) -> None:
    """The section for ``stack`` of ``config``'s model (``layers`` × ``heads``); ``lines_state``: the sidebar values
    that put the page's lines on the Attention page (source text, length), set when a query is clicked."""
    st.caption("Every real query (circles) and key (crosses) of the lines, projected together (PCA) after both are "
               "scaled to equal mean norms and the keys are then moved onto the queries' centroid, as AttentionViz "
               "does: neither changes which key a query prefers, and near means attended. Click a query to open it "
               "on the Attention page.")
    clamp(F.qk_layer, layers - 1)
    clamp(F.qk_head, heads - 1)
    columns = st.columns(3)
    layer = columns[0].slider("Layer", 0, max(layers - 1, 1), key=F.qk_layer, disabled=layers < 2, **PERSIST)
    head = columns[1].slider("Head", 0, max(heads - 1, 1), key=F.qk_head, disabled=heads < 2, **PERSIST)
    colour = columns[2].radio("Colour by", COLOURINGS, key=F.qk_colour, format_func=COLOUR_LABELS.get,
                              horizontal=True, **PERSIST)
    space = data.query_key_space(config, stack, layer, head)

    def focus(clicked: dict) -> None:
        if "query" not in clicked:
            return
        state.update(lines_state)
        state.open_page(Page.ATTENTION.file, stack=stack, layer=layer, head=head,
                        element=int(clicked.get("line", 0)), focus=int(clicked["query"]), focus_key=False)

    coincide = f", {space.distinct} distinct" if space.distinct < len(space.points) else ""
    title = (f"{stack} layer {layer} head {head}: {int(space.is_query.sum())} queries and "
             f"{int((~space.is_query).sum())} keys{coincide} · per query, distance tracks q·k/√d_k: r = "
             f"{space.correlation:.2f} in the plane, {space.full_correlation:.2f} in d_k dimensions")
    plot(query_key_figure(space.points, space.is_query, space.lines, space.positions, space.tokens, colour, title),
         "query_key", on_click=focus)
    st.caption(f"The plane holds {percent(space.explained.sum())} of the spread (PC 1 "
               f"{percent(space.explained[0])}, PC 2 {percent(space.explained[1])}); r: for each query, the "
               "correlation of −distance and the scaled dot product over the keys it may attend to, averaged over the "
               "queries (1: nearness ranks every query's keys as attention does; a query's softmax ignores what it "
               f"adds to all its keys alike). Scale c = {space.scale:.2f}."
               + (f" Points that coincide (equal tokens at equal positions of equal lines) are drawn once: "
                  f"{space.distinct} places for {len(space.points)} points." if coincide else ""))
    state.follow_open_page()
    state.write_url()  # a fragment's rerun does not reach app.py, which writes the link after a whole run
