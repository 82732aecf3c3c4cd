"""Process-wide adjustments to how Streamlit runs this app."""

from __future__ import annotations

import gc

_FROZEN = False


def freeze_startup_objects() -> bool:
    """Move every object alive now out of the garbage collector's sight, once per process.

    With TensorFlow, Keras, Plotly and Streamlit loaded there are ~370,000 long-lived
    objects, and each full (generation 2) collection walks all of them: ~120 ms with the
    GIL held, so whichever session triggered it waited (the load test's tail latency).
    `gc.freeze` keeps them out of later collections; newer objects are collected as
    usual. Returns True on the call that froze.
    """
    global _FROZEN
    if _FROZEN:
        return False
    import plotly.graph_objects  # noqa: F401, PLC0415  (the pages' heaviest import, frozen with the rest)

    # No gc.collect() first: after these imports it finds nothing to free (0 objects) and takes ~0.2 s of a
    # cold start's first page.
    gc.freeze()
    _FROZEN = True
    return True


def session_id() -> str:
    """This session's id in the Streamlit server ("" outside a script run, as in some tests)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx  # noqa: PLC0415

    context = get_script_run_ctx(suppress_warning=True)
    return context.session_id if context is not None else ""


def session_alive(session: str) -> bool:
    """Whether the session ``session`` is still connected to this server (always, where no server runs: AppTest)."""
    from streamlit import runtime  # noqa: PLC0415

    if not session or not runtime.exists():
        return True
    return runtime.get_instance().is_active_session(session)


BEHIND_PROXY_ENV = "ATTENTION_LAB_BEHIND_PROXY"  # "1": a proxy of ours in front (deploy/'s nginx sets it)


def client_from(direct: str | None, forwarded: str, behind_proxy: bool) -> str:
    """A client's address from the connection's own (``direct``, None for this machine) and ``X-Forwarded-For``.
    Behind our proxy (``behind_proxy``) the connection is the proxy's, and the header's last entry is the client's
    (the one the proxy added: a client cannot forge it). Without one the header is the client's own writing, never
    read: the connection's address, or "local" for a browser on this machine."""
    hops = [hop.strip() for hop in str(forwarded or "").split(",") if hop.strip()]
    if behind_proxy and hops:
        return hops[-1]
    return direct if isinstance(direct, str) and direct else "local"


def client_address() -> str:
    """The address this session's browser connects from (`client_from`); "local" for a browser on this machine."""
    import os  # noqa: PLC0415

    import streamlit as st  # noqa: PLC0415

    try:
        direct = st.context.ip_address
        forwarded = st.context.headers.get("X-Forwarded-For", "")
    except Exception:  # outside a session (tests): one client
        return "local"
    return client_from(direct, forwarded, os.environ.get(BEHIND_PROXY_ENV, "") == "1")


def page_address() -> str | None:
    """The address of this page as the browser shows it (scheme, host, port and path; no query), or None where no
    browser said it (AppTest, a bare run)."""
    import streamlit as st  # noqa: PLC0415

    try:
        return st.context.url or None
    except Exception:  # outside a session
        return None
