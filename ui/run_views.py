"""What a page's engine run draws besides its charts: the sidebar's status line (device, TensorFlow, memory, how long
the model ran), the run's notices, and a trained model's predictions (`ui.data` calls these after each run)."""

from __future__ import annotations

import streamlit as st

from transformer import service
from ui import state
from ui.text import percent


def show_status(result) -> None:
    """The status line for a live run: device, TensorFlow version, and how long the model ran (a page that
    draws no attention runs none: its masks and encodings need only the configuration)."""
    timing = (f"**model run** {result.compute_seconds * 1000:.1f} ms" if result.attention
              else "this page runs no model")
    record_status(device=result.device_label, tensorflow=result.tf_version, timing=timing,
            memory=memory_text(result.device))


def memory_text(device: str) -> str:
    """``**GPU memory** 0.31 / 24.0 GB`` (in use by TensorFlow / on the device) for a GPU; "" for the CPU."""
    memory = service.memory_in_use(device)
    if memory is None:
        return ""
    used, total = memory
    return f"**GPU memory** {used / 2**30:.2f}" + (f" / {total / 2**30:.1f} GB" if total else " GB")


def record_status(**parts) -> None:
    """Record the sidebar's status line (device, tensorflow, timing); parts not given keep their last value."""
    status = {**state.get(state.STATUS_PARTS, {}), **parts}
    state.put(state.STATUS_PARTS, status)
    text = " · ".join(filter(None, [
        f"**Device:** {status['device']}" if "device" in status else "",
        f"**TensorFlow** {status['tensorflow']}" if "tensorflow" in status else "",
        status.get("memory", ""),
        status.get("timing", ""),
    ]))
    state.put(state.LAST_STATUS, text)  # the sidebar draws it once the page has run (sidebar.draw_status)


def show_notices(slot, notices) -> None:
    """``notices`` as one alert in ``slot`` (a container the page draws whether or not there are any).

    Why the slot: Streamlit matches the elements of a rerun with the page's by their place in their
    block. An alert that comes and goes in front of the charts (a line cut at one length and not at
    the next) shifts everything after it, and the browser throws those charts away and builds them
    again, each a first Plotly draw. One alert, not one per notice: the page jumps less.
    """
    if notices:
        slot.info("  \n".join(notices), icon=":material/info:")


def predictions_label(predictions) -> str:
    """What the predictions count, with its unit: whole answers for a sequence-to-sequence model; next tokens (as the
    Induction page counts them) and whole lines for a next-token model."""
    right, lines = sum(p["correct"] for p in predictions), len(predictions)
    line_text = f"{right} of {lines} line{'s' * (lines != 1)}"
    if not predictions[0].get("next_token", False):
        return f"Predictions of the trained model: {line_text} right (the whole answer)"
    tokens = sum(p["tokens_right"] for p in predictions)
    counted = sum(p["tokens_counted"] for p in predictions)
    share = f" ({percent(tokens / counted)})" if counted else ""
    return (f"Next-token predictions of the trained model: {tokens} of {counted} next tokens right{share} where the "
            f"rule has an answer · {line_text} right at every such token")


def show_predictions(predictions) -> None:
    """The trained model's answer for each source line next to the expected one."""
    next_token = predictions[0].get("next_token", False)
    with st.expander(predictions_label(predictions), expanded=True):
        if next_token:
            st.caption("After each token, the model's most probable next token; expected: the in-context rule (what "
                       "followed that token's latest earlier occurrence, · where it did not occur before). Right: the "
                       "two agree wherever the rule has an answer.")
        # what was predicted first, marked right (✓) or wrong (✗), and the long source last: on a phone the table
        # shows its first columns and the source scrolls
        st.dataframe(
            [{"line": i + 1, "prediction": f"{'✓' if p['correct'] else '✗'} {p['prediction']}",
              "expected": p["expected"],
              **({"next tokens right": f"{p['tokens_right']} of {p['tokens_counted']}"} if next_token else {}),
              "source": p["source"]} for i, p in enumerate(predictions)],
            hide_index=True,
        )
