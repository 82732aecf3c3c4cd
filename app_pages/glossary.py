"""Glossary: the lab's words in plain language, each with an anchor the pages' openings link to (ui/openings.py)."""

import streamlit as st

from ui import openings
from ui.pages import Page

openings.show(openings.GLOSSARY_PAGE)
for name, meaning, page in openings.GLOSSARY:
    st.subheader(name, anchor=openings.anchor_of(name))
    st.markdown(meaning)
    st.page_link(Page(page).file, label=f"See it on the {openings.page_title(page)} page",
                 icon=":material/arrow_forward:")
