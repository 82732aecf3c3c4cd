"""The app's fields: one per control, its default and the parser of its link value (`ui.state` keeps them in the
session and mirrors them in the URL). A field is named by attribute, ``F.weights``, never by a string."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from transformer.service import (
    ABLATIONS,
    ARCHITECTURES,
    DATE_PARTS,
    DEVICE_CHOICES,
    LINE_SOURCES,
    MASK_FAMILIES,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_MODEL_LAYERS,
    MAX_SEQ_LEN,
    NORMS,
    PATCHING,
    PATTERN_FAMILIES,
    POSITIONS,
    RANDOM,
    ROLES,
    SEED_BATCH,
    ModelShape,
)
from transformer.service import GROUPS as INDUCTION_GROUPS
from ui import link_values
from ui.choices import (
    ATTENTION_VIEWS,
    CELLS,
    COST_MAXIMA,
    D_FF_CHOICES,
    D_MODEL_CHOICES,
    DECODE_MODES,
    EXPLANATION_COUNTS,
    IMPORTANCE_COUNTS,
    INDUCTION_COUNTS,
    LOGIT_SIZES,
    ROLE_LINE_COUNTS,
    STACK_CHOICES,
    TEMPERATURES,
    TOP_KS,
    TOP_PS,
)
from viz.query_key import COLOURINGS as QK_COLOURINGS

MAX_TEXT_CHARS = 20_000


@dataclass(frozen=True)
class Field:
    """A control's default, the parser of its link text, and ``words``: what a special value means, as a notice
    says it (``(-1, "no token is focused")``) rather than by the value itself."""

    default: Any
    parse: Callable[[str], Any]
    words: tuple[tuple[Any, str], ...] = ()

    def using(self, value, shown: str) -> str:
        """How a notice says the value used instead (``shown``: the value as the link would write it)."""
        return next((words for special, words in self.words if special == value), f"using {shown!r}")


SHAPE = ModelShape()  # the shape fields' defaults: the spec's own (transformer.core.shape)
FIELDS: dict[str, Field] = {
    # model controls in the sidebar
    "weights": Field(RANDOM, link_values.weights),
    "d_model": Field(SHAPE.d_model, link_values.choice(D_MODEL_CHOICES, int)),
    "heads": Field(SHAPE.num_heads, link_values.integer(1, MAX_HEADS)),
    "d_ff": Field(SHAPE.d_ff, link_values.choice(D_FF_CHOICES, int)),
    "layers": Field(SHAPE.num_layers, link_values.integer(1, MAX_LAYERS)),
    "seq_len": Field(7, link_values.integer(1, MAX_SEQ_LEN)),
    "seed": Field(0, link_values.integer(0, 2**31 - 1)),
    "pads": Field("0 <pad>", link_values.text(200)),
    "src": Field(SEED_BATCH, link_values.text(MAX_TEXT_CHARS)),
    "tgt": Field(SEED_BATCH, link_values.text(MAX_TEXT_CHARS)),
    "device": Field("auto", link_values.choice(DEVICE_CHOICES)),
    "positions": Field(SHAPE.positions, link_values.choice(POSITIONS)),
    # kv_heads: as many as the heads (the paper)
    "kv_heads": Field(0, link_values.integer(0, MAX_HEADS),
          ((0, "every head keeps its own keys and values"),)),
    "arch": Field(SHAPE.architecture, link_values.choice(ARCHITECTURES)),
    "norm": Field(SHAPE.norm, link_values.choice(NORMS)),
    "mask_family": Field("paper", link_values.choice(MASK_FAMILIES)),
    "mask_size": Field(4, link_values.integer(0, MAX_SEQ_LEN)),
    "ablate": Field([], link_values.ablate),  # heads ablated, as head codes ("e0.1"); every page runs the ablated model
    "ablation": Field("zero", link_values.choice(ABLATIONS)),
    # page controls
    "stack": Field("encoder", link_values.choice(STACK_CHOICES)),
    "layer": Field(0, link_values.integer(0, MAX_MODEL_LAYERS - 1)),
    "element": Field(0, link_values.integer(0, 15)),
    "head": Field(0, link_values.integer(0, MAX_HEADS - 1)),
    "pad_mask": Field(True, link_values.flag),
    "future_mask": Field(True, link_values.flag),
    "pe_dims": Field("4 5 6 7", link_values.text(400)),
    # pe_positions: a default of "0 … 7" warned at length 7
    "pe_positions": Field("", link_values.text(400),
          (("", "the first 8 positions are drawn"),)),
    "step": Field(0, link_values.integer(0, 7)),  # the Shapes page's step
    "view": Field(ATTENTION_VIEWS[0], link_values.choice(ATTENTION_VIEWS)),
    "cells": Field(CELLS[0], link_values.choice(CELLS)),  # the head grid: weights or value-weighted norms
    "full_res": Field(False, link_values.flag),  # the Attention page's full-resolution head is open
    # focus: the Attention page's focused token
    "focus": Field(-1, link_values.integer(-1, MAX_SEQ_LEN - 1),
          ((-1, "no token is focused"),)),
    "focus_key": Field(False, link_values.flag),  # … focused as a key ("attended by"), not as a query
    "specials": Field(False, link_values.flag),  # … <s>, </s> and padding keys hidden, rows renormalised
    "hidden_heads": Field([], link_values.heads),  # the head view's heads switched off
    "nv_head": Field(0, link_values.integer(0, MAX_HEADS - 1)),  # the neuron view's head
    # the neuron view's key (or query, a key focused); -1: the one the focused token attends to (is attended by) most
    "nv_other": Field(-1, link_values.integer(-1, MAX_SEQ_LEN - 1),
                      ((-1, "the key the query attends to most is shown"),)),
    "crop_q": Field(0, link_values.integer(0, MAX_SEQ_LEN)),
    "crop_k": Field(0, link_values.integer(0, MAX_SEQ_LEN)),
    "row": Field(0, link_values.integer(0, MAX_SEQ_LEN - 1)),  # the Dot-product lab's query row for the mask fills
    "block_row": Field(False, link_values.flag),  # … with every key of that row blocked
    "logit_size": Field(100, link_values.choice(LOGIT_SIZES, int)),
    # the Heads page
    "roles_lines": Field("lines", link_values.choice(LINE_SOURCES)),
    "roles_count": Field(16, link_values.choice(ROLE_LINE_COUNTS, int)),
    "roles_pattern": Field("", link_values.choice(("", *PATTERN_FAMILIES)),
          (("", "no pattern of your own is scored"),)),
    "imp_kind": Field("zero", link_values.choice(ABLATIONS)),
    "imp_count": Field(200, link_values.choice(IMPORTANCE_COUNTS, int)),
    "ex_count": Field(50, link_values.choice(EXPLANATION_COUNTS, int)),
    # the Images page: the model, its image (a match image's seed or a test digit's index), the pixels flipped on it,
    # and the token whose attention is drawn (0: CLS, 1 + p: patch p)
    "img_model": Field("match", link_values.image_model),
    "img_pick": Field(0, link_values.integer(0, 2**31 - 1)),
    "img_flip": Field([], link_values.pixels),
    "img_from": Field(0, link_values.integer(0, 16)),
    "qk_layer": Field(0, link_values.integer(0, MAX_MODEL_LAYERS - 1)),  # the Heads page's query–key space
    "qk_head": Field(0, link_values.integer(0, MAX_HEADS - 1)),
    "qk_colour": Field("position", link_values.choice(QK_COLOURINGS)),
    # the Induction page
    "ind_seed": Field(0, link_values.integer(0, 2**31 - 1)),
    "ind_count": Field(200, link_values.choice(INDUCTION_COUNTS, int)),
    "ind_ablate": Field("none", link_values.choice(INDUCTION_GROUPS)),
    # the Patching page (on the sidebar's model): the lines ("": drawn from the seed, made by the task's
    # corruption), what is measured and which map; a path's receiver; the cell opened (-1: none) and the head its
    # three runs show
    "pt_seed": Field(0, link_values.integer(0, 2**31 - 1)),
    "pt_clean": Field("", link_values.text(400), (("", "the clean line is drawn from the seed"),)),
    "pt_corrupt": Field("", link_values.text(400),
          (("", "the corrupted line is the task's corruption of the clean one"),)),
    "pt_part": Field("", link_values.choice(("", *DATE_PARTS)), (("", "any part of the date is corrupted"),)),
    # a real language model's two answers, one piece each ("": indirect-object identification's)
    "pt_answer": Field("", link_values.text(40), (("", "the clean answer is IOI's"),)),
    "pt_canswer": Field("", link_values.text(40), (("", "the corrupted answer is IOI's"),)),
    "pt_metric": Field("", link_values.choice(("", *PATCHING.metrics)),
          (("", "the model's first measure is used"),)),
    "pt_dir": Field(PATCHING.directions[0], link_values.choice(PATCHING.directions)),
    "pt_map": Field(PATCHING.maps[0], link_values.choice(PATCHING.maps)),
    # pt_stack: the stream map's
    "pt_stack": Field("", link_values.choice(("", "encoder", "decoder")),
          (("", "the first stack is drawn"),)),
    # pt_rstack: the receiver's
    "pt_rstack": Field("", link_values.choice(("", *STACK_CHOICES)),
          (("", "the model's last stack receives"),)),
    "pt_rlayer": Field(-1, link_values.integer(-1, MAX_MODEL_LAYERS - 1),
          ((-1, "the last layer receives"),)),
    "pt_rhead": Field(0, link_values.integer(0, MAX_HEADS - 1)),
    "pt_rside": Field("k", link_values.choice(PATCHING.sides)),
    "pt_ln": Field(PATCHING.layer_norms[0], link_values.choice(PATCHING.layer_norms)),  # the receiver's LayerNorm
    "pt_bypos": Field(False, link_values.flag),  # a heads or path map by position
    "pt_row": Field(-1, link_values.integer(-1, max(4 * MAX_LAYERS, MAX_MODEL_LAYERS + 1)),  # a real model's stream
                    ((-1, "no cell is opened"),)),
    "pt_col": Field(-1, link_values.integer(-1, MAX_SEQ_LEN), ((-1, "no cell is opened"),)),
    "pt_head": Field(-1, link_values.integer(-1, MAX_HEADS - 1),
          ((-1, "the cell's own head is shown"),)),
    # the Train page's timeline
    "tl_stack": Field("decoder", link_values.choice(STACK_CHOICES)),
    "tl_role": Field("induction", link_values.choice((*ROLES, "alignment"))),  # cross-attention's role: its alignment
    "tl_step": Field(-1, link_values.integer(-1, 100_000),
          ((-1, "the latest snapshot is shown"),)),
    # the Cost page
    "cost_max": Field(1024, link_values.choice(COST_MAXIMA, int)),
    # the Decode page
    "dec_src": Field("", link_values.text(400),
          (("", "the model's own example is decoded"),)),
    "dec_mode": Field(DECODE_MODES[0], link_values.choice(DECODE_MODES)),
    "dec_temp": Field(1.0, link_values.choice(TEMPERATURES, float)),
    "dec_top_k": Field(0, link_values.choice(TOP_KS, int)),
    "dec_top_p": Field(1.0, link_values.choice(TOP_PS, float)),
    "dec_seed": Field(0, link_values.integer(0, 2**31 - 1)),
    "dec_step": Field(0, link_values.integer(0, 64)),
    "dec_play": Field(False, link_values.flag),
    "dec_cache_layer": Field(0, link_values.integer(0, MAX_MODEL_LAYERS - 1)),
}


class _FieldNames:
    """The fields' names as attributes (``F.weights == "weights"``): callers name a field by attribute, never by a
    string, so that a mistyped name is an AttributeError wherever the line runs, in the tests first."""

    def __getattr__(self, name: str) -> str:
        if name in FIELDS:
            return name
        raise AttributeError(f"{name!r} is not a field of ui/state.FIELDS")


F = _FieldNames()
