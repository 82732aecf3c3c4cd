"""Streamlit glue shared by app.py and the pages: state, sidebar, cached engine calls."""
