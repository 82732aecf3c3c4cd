"""The framework's floor for the benchmark: one slider, one small chart, nothing else.

``?chart=plotly_chart`` (the default) draws with Streamlit's own ``st.plotly_chart``;
``?chart=component`` with this app's ``ui.chart`` (``bench/static`` links to the app's
``static/`` so that Plotly.js is served here too).
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

n = st.slider("Sequence length", 1, 512, 7)
figure = go.Figure(go.Heatmap(z=np.eye(n, dtype=np.float32)))
if st.query_params.get("chart") == "component":
    from ui.chart import chart, publish_plotly_js

    publish_plotly_js()
    chart(figure, key="floor")
else:
    st.plotly_chart(figure, theme=None)
