"""Query–key: one head's queries and keys over many lines in one plane (AttentionViz's view), any stack of the lab's
own models; a click on a query opens it on the Attention page."""

import streamlit as st

from transformer.service import spec_of
from ui import model_config, openings, state
from ui.controls import carried_over, stack_picker
from ui.line_sources import line_controls, sidebar_values
from ui.query_key_view import query_key_section
from ui.state import F

openings.show("query_key")
openings.how("A head attends from a query to the keys nearest it in dot product. Here are the queries and keys of many "
             "lines at once, as AttentionViz (Yeh et al., 2023) draws them: clusters show what the head groups "
             "together, whatever the line.")
if not model_config.supports().inside:
    st.info("The query–key space reads the lab's own models (their queries and keys); a model from outside is read "
            "through its attention weights only: see the Attention and Heads pages.", icon=":material/info:")
    st.stop()
weights = state.read(F.weights)
trained = model_config.supports().predictions  # a trained model: its task's lines (outside stopped above)
controls = st.columns([3, 2, 2])
with controls[0]:
    stack = stack_picker()
_, overrides = line_controls(controls[1], controls[2], trained)
config = model_config.live_config(**overrides)
carried_over(config, "query_key")
spec = spec_of(weights) if trained else None
layers, heads = (spec.num_layers, spec.num_heads) if spec else (config.num_layers, config.num_heads)
query_key_section(config, stack, layers, heads, sidebar_values(overrides))
