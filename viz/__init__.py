"""Plotly figure builders: NumPy in, go.Figure out. No TensorFlow, no Streamlit."""
