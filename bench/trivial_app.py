"""The framework's floor for the benchmark: one slider, one small chart, nothing else."""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

n = st.slider("Sequence length", 1, 512, 7)
st.plotly_chart(go.Figure(go.Heatmap(z=np.eye(n, dtype=np.float32))), theme=None)
