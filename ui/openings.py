"""What each page says first, in plain words a first-year student reads at once (what the picture is, what to look
at), and the glossary its terms link to. A page draws its opening under its title (``show``), and may fold its
precise statement below it (``how``). tests/unit/test_openings.py scores every opening's readability."""

from __future__ import annotations

import re

import streamlit as st

from ui.pages import PAGES

GLOSSARY_PAGE = "glossary"


def anchor_of(name: str) -> str:
    """A glossary entry's anchor: ``"Look-ahead mask"`` -> ``"look-ahead-mask"``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def term(word: str, anchor: str | None = None) -> str:
    """``word`` as a link to its glossary entry (``anchor``: the entry, when ``word`` is an inflected form)."""
    return f"[{word}]({GLOSSARY_PAGE}#{anchor or anchor_of(word)})"


OPENINGS = {  # page -> its first one or two sentences (Markdown: a term's first use links to the glossary)
    "home": f"A Transformer reads a line of text, and for each word it chooses which other words to look at: that "
            f"choice is {term('attention')}. Here you change the model and watch where it looks.",
    "masks": f"A {term('mask')} says which words each word may look at: blue cells are allowed, grey cells are "
             "blocked. Each row is a word that looks, each column a word it may see.",
    "positional_encoding": f"Attention alone does not know the order of the words, so the model adds a "
                           f"{term('position signal', 'positional-encoding')} to each one. The pictures show these "
                           "signals and how alike two positions look.",
    "attention": f"Each square shows how much one word (a row, the {term('query')}) looks at another word (a column, "
                 f"the {term('key')}): dark means a lot. Each {term('head')} looks in its own way, so each gets its "
                 "own picture.",
    "heads": f"Each {term('head')} learns a habit of its own, such as looking at the word just before. This page finds "
             f"each head's habit and, for a trained model, turns heads off one at a time to see which ones matter "
             f"({term('ablation')}).",
    "explanations": "People often read attention as a reason: the model wrote this word because it looked at that "
                    "one. Here we know the right answer, so we can test that idea and score six ways to explain.",
    "images": f"A Transformer can read a picture too: it cuts the image into small squares and treats each square "
              f"like a word. See which squares each {term('head')} looks at, and click a pixel to flip it.",
    "query_key": f"A head looks from a {term('query')} to the {term('keys', 'key')} that point the same way as it. "
                 "This map puts the queries and keys of many lines in one plane, so you can see what the head groups.",
    "patching": f"Run a trained model on a line and on a copy with one thing changed. Then copy one part of the "
                f"first run into the second and see how much of the right answer comes back: that part carries it. "
                f"This is {term('patching')}.",
    "induction": f"If a line says A B and later A again, a good guess for the next word is B. An "
                 f"{term('induction head')} makes that guess: it looks back at what came after A the first time.",
    "dot_product_lab": f"One head's sum, one step at a time: compare each {term('query')} with each {term('key')}, "
                       f"scale, {term('mask')}, turn the scores into weights ({term('softmax')}), then mix the "
                       f"{term('values', 'value')}. Change a number and watch each step change.",
    "shapes": f"Attention works on tables of numbers ({term('tensors', 'tensor')}), and each step changes their "
              "shape. This page shows the shape at every step, read off the running model.",
    "cost": "Attention compares every word with every other word, so its cost grows fast as lines get longer. This "
            "page times one attention layer at many lengths and shows how time and memory grow.",
    "decode": f"A model writes one {term('token')} at a time: a trained model its answer, a decoder-only model what "
              "follows a prompt. Step through it to see where it looks at each step and which token it thinks comes "
              "next.",
    "train": "Train a small model here (minutes on a laptop; the page says how long on this server), then see what "
             "its attention learned on every page. You can watch its heads change while it trains.",
    "class_room": "Your teacher asks about a picture, and you answer before you see it. Then the lab shows what the "
                  "model did, beside what the whole class said.",
    GLOSSARY_PAGE: "Short meanings of the words this lab uses, in plain words. Each one says where to see it.",
}

VIEW_OPENINGS = {  # the Attention page's views (ui/choices.ATTENTION_VIEWS): what each shows, in plain words
    "Checks": f"These checks test that the weights make sense: each row of {term('attention')} adds up to 1, and "
              "blocked cells get 0. They also compare this model with the attention layer Keras ships.",
    "Statistics": f"One row for each {term('head')}: how spread out its looking is ({term('entropy')}), how far away "
                  "it looks, and how much goes to padding. A head that looks at one word has low entropy.",
    "Model view": f"Every {term('layer')} and every head at once, each as a small picture. Look for heads that draw "
                  "the same shape, such as a line just below the diagonal.",
    "Head view": "Lines join each word on the left to the words it looks at on the right: a darker line means more. "
                 "Click a head in the legend to hide its lines.",
    "Rollout": f"{term('Rollout')} follows attention through all the layers at once: which input words each word "
               "drew on in the end. Flow is a second way to follow it.",
    "Neuron view": f"How one {term('query')} meets each {term('key')}: their numbers are multiplied pair by pair, and "
                   "the sum is the score. Pick a query to see why it scores each key as it does.",
    "Score terms": "Why a head looks where it does: one score split into the parts that made it. The biggest part "
                   "says what in the key made it win.",
}

HEADINGS = {  # a page's title where it says more than its name in the navigation (ui/pages.py)
    "home": "Attention Lab",
    "explanations": "Which explanation is right",
    "images": "Attention over images",
    "query_key": "Query–key space",
    "train": "Train a model",
    "class_room": "A class in the lab",
}

GLOSSARY = (  # (term, what it means, where to see it: a page's file name); in the order a reader meets them
    ("Token", "One piece of a line: a word, a letter or a symbol. The model reads a line as a list of tokens.",
     "attention"),
    ("Attention", "For each token, a set of weights over the other tokens that adds up to 1: how much it takes from "
     "each one. Dark cells in the pictures are large weights.", "attention"),
    ("Query", "What a token is looking for. It is a list of numbers made from the token.", "dot_product_lab"),
    ("Key", "What a token offers to be found by. A query gives a high score to keys that point the same way.",
     "dot_product_lab"),
    ("Value", "What a token passes on once it is looked at. The output mixes the values by the attention weights.",
     "dot_product_lab"),
    ("Head", "One attention of its own inside a layer, with its own queries, keys and values. A layer runs several "
     "heads side by side, and each learns a different habit.", "heads"),
    ("Mask", "A table of yes and no: may this token look at that one? Blocked cells get a weight of 0.", "masks"),
    ("Padding", "Filler tokens that make short lines as long as the longest. The padding mask stops anyone from "
     "looking at them.", "masks"),
    ("Look-ahead mask", "A mask that lets each token see only itself and the tokens before it, so a model that writes "
     "cannot peek at what comes next.", "masks"),
    ("Logit", "A raw score before it is turned into a weight or a probability. Larger means more likely.",
     "dot_product_lab"),
    ("Softmax", "Turns a row of scores into weights that are all positive and add up to 1. The largest score gets "
     "the largest weight.", "dot_product_lab"),
    ("Entropy", "How spread out a head's weights are, in bits: 0 when it looks at one token alone, higher when it "
     "spreads its weight over many.", "attention"),
    ("Positional encoding", "Numbers added to each token that say where it stands in the line. Without them the "
     "model could not tell 'dog bites man' from 'man bites dog'.", "positional_encoding"),
    ("Tensor", "A table of numbers with any number of sides: a line of tokens is 2-D, a batch of lines 3-D.",
     "shapes"),
    ("Layer", "One round of attention followed by a small network. Models stack several, each reading what the one "
     "before wrote.", "attention"),
    ("Residual stream", "The running total each token carries from layer to layer: every layer reads it and adds "
     "its own result to it.", "attention"),
    ("Encoder and decoder", "The encoder reads the input line; the decoder writes the answer, looking at the encoder "
     "through cross-attention. A decoder-only model (like GPT) just continues a line.", "attention"),
    ("Cross-attention", "Attention from the tokens being written to the tokens of the input line.", "attention"),
    ("Position", "A token's place in its line, counted from 0, and how every picture names it: '1·f' is position 1, "
     "which reads the token f. A decoder position reads the token written before it (position 0 reads the start "
     "mark <s>) and writes the next one; where a picture is about what it writes, the label says both: "
     "'0·<s>→f'.", "attention"),
    ("Ablation", "Turning part of the model off (here, one head) to see what the model loses without it.", "heads"),
    ("Patching", "Copying one part of a run on one line into a run on a changed line, to see how much of the "
     "answer that part carries.", "patching"),
    ("Rollout", "Attention followed through every layer at once: which input tokens a token drew on in the end.",
     "attention"),
    ("Induction head", "A head that finds an earlier place where the current token appeared and copies the token "
     "that came after it.", "induction"),
    ("Teacher forcing", "Training and scoring a model by feeding it the right answer so far, not its own guesses.",
     "explanations"),
)


def page_title(page: str) -> str:
    return next(title for name, title, _icon, _says in PAGES if name == page)


def heading(page: str) -> str:
    return HEADINGS.get(page) or page_title(page)


def show(page: str) -> None:
    """``page``'s title and its opening under it: what a page draws first (also while the engine loads:
    ui/starting.py)."""
    st.title(heading(page))
    st.markdown(OPENINGS[page])


def show_view(view: str) -> None:
    """The Attention page's ``view``'s opening, drawn above it (one element whatever the view, so that a switch
    moves nothing)."""
    st.markdown(VIEW_OPENINGS[view])


def how(text: str) -> None:
    """A page's precise statement, folded under its opening."""
    with st.expander("How it is computed", icon=":material/functions:"):
        st.markdown(text)
