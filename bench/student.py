"""One simulated student speaking Streamlit's own WebSocket protocol, as the browser does (no browser).

The student connects to ``/_stcore/stream`` (subprotocol ``streamlit``), asks for a page with its link
(a rerun request carrying the query string), reads the ForwardMsgs until the run is over, and then
moves controls: a widget's new value in a rerun request, as the browser sends it. Each answer is checked:
the run finished (not stopped), no exception element, the expected elements arrived (charts on the
pages that draw them), and every token the charts show is the student's own.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

PAGES = ("masks", "attention", "positional_encoding", "dot_product_lab", "shapes")
CHART_COMPONENT = "attention_lab_plotly"
ANSWER_TIMEOUT = 120.0


@dataclass
class Answer:
    """What one request brought back."""

    seconds: float
    finished: bool
    charts: int
    exceptions: int
    chart_bytes: list = field(default_factory=list)
    widgets: dict = field(default_factory=dict)  # label -> (kind, id) of the widgets drawn
    texts: list = field(default_factory=list)  # what the progress bars and messages say
    auto_reruns: dict = field(default_factory=dict)  # fragment id -> seconds between its reruns (run_every)


@dataclass
class Student:
    """``number``: the student's tokens are ``s<number>a``, ``s<number>b`` …; ``url``: ``http://host:port``."""

    number: int
    url: str
    rng: random.Random = field(default_factory=random.Random)
    answers: list = field(default_factory=list)  # (kind of move, Answer)
    leaks: int = 0
    errors: list = field(default_factory=list)
    page: str = "masks"
    page_hash: str = ""  # the page's script hash, as the server last named it: a browser sends it with every rerun
    widgets: dict = field(default_factory=dict)
    _socket: object = None

    @property
    def source(self) -> str:
        """Three lines of the student's own tokens."""
        own = [f"s{self.number}{letter}" for letter in "abcdefg"]
        return "\n".join([" ".join(own[:5]), " ".join(own[2:4]), " ".join(own)])

    def link(self, **extra) -> str:
        return urlencode({"src": self.source, "tgt": self.source, "seq_len": 7, **extra})

    async def connect(self) -> None:
        address = self.url.replace("http://", "ws://") + "/_stcore/stream"
        self._socket = await websockets.connect(address, subprotocols=["streamlit"], origin=self.url,
                                                max_size=None, open_timeout=60, ping_interval=None)

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()

    async def open_page(self, page: str, query: str) -> Answer:
        """Open ``page`` as a link does: a rerun request with the page's name and the link's query."""
        self.page, self.page_hash = page, ""
        message = BackMsg()
        message.rerun_script.query_string = query
        message.rerun_script.page_name = page
        return await self._ask(message)

    def _on_this_page(self, message: BackMsg) -> BackMsg:
        """``message`` for the page shown, named as a browser names it: with its script hash too, which a run that a
        fragment's ``st.rerun()`` starts keeps (by its name alone, that run drew the app's first page)."""
        message.rerun_script.page_name = self.page
        message.rerun_script.page_script_hash = self.page_hash
        return message

    async def move(self, label: str, value, fragment_id: str = "") -> Answer:
        """Set the widget labelled ``label`` to ``value`` (its state only, as the browser sends a change); a widget of
        a fragment (``fragment_id``) reruns that fragment alone, as in the browser."""
        kind, widget_id = self.widgets[label]
        message = BackMsg()
        state = message.rerun_script.widget_states.widgets.add()
        state.id = widget_id
        _set_state(state, kind, value)
        message = self._on_this_page(message)
        message.rerun_script.fragment_id = fragment_id
        return await self._ask(message)

    async def submit(self, button: str, **values) -> Answer:
        """Press a form's submit ``button`` with its widgets set to ``values`` (labels -> values)."""
        message = BackMsg()
        for label, value in values.items():
            kind, widget_id = self.widgets[label]
            state = message.rerun_script.widget_states.widgets.add()
            state.id = widget_id
            _set_state(state, kind, value)
        trigger = message.rerun_script.widget_states.widgets.add()
        trigger.id, trigger.trigger_value = self.widgets[button][1], True
        return await self._ask(self._on_this_page(message))

    async def rerun_fragment(self, fragment_id: str) -> Answer:
        """A fragment's own rerun, as the browser sends it every ``run_every`` seconds."""
        message = self._on_this_page(BackMsg())
        message.rerun_script.fragment_id = fragment_id
        message.rerun_script.is_auto_rerun = True
        return await self._ask(message)

    async def train_once(self, steps: int, timeout: float = 900.0) -> str:
        """Open the Train page, press Train (``steps`` steps, the form's other defaults) and follow the job as the
        browser does (each fragment's reruns at its own pace) until it ends; then explore the model. Returns what
        the page said last: ``done``, ``stopped``, ``refused: …`` or ``failed: …`` (``timeout`` otherwise)."""
        opened = await self.open_page("train", "")
        self.answers.append(("train", opened))
        answer = await self.submit("Train", Steps=steps)
        self.answers.append(("train", answer))
        auto = dict(opened.auto_reruns, **answer.auto_reruns)
        due = {fragment: time.monotonic() + interval for fragment, interval in auto.items()}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            refused = [text for text in answer.texts if "the most this server queues" in text]
            if refused:
                return f"refused: {refused[0]}"
            failed = [text for text in answer.texts if text.startswith("Training failed")]
            if failed:
                return f"failed: {failed[0]}"
            if "Explore this model's attention" in answer.widgets:
                self.answers.append(("train", await self.submit("Explore this model's attention")))
                return "done"
            fragment = min(due, key=due.get)
            await asyncio.sleep(max(0.0, due[fragment] - time.monotonic()))
            due[fragment] = time.monotonic() + auto[fragment]
            answer = await self.rerun_fragment(fragment)
            self.answers.append(("train", answer))
        return "timeout"

    async def _ask(self, message: BackMsg) -> Answer:
        started = time.perf_counter()
        await self._socket.send(message.SerializeToString())
        answer = Answer(0.0, False, 0, 0)
        cached = {}
        while True:
            raw = await asyncio.wait_for(self._socket.recv(), ANSWER_TIMEOUT)
            reply = ForwardMsg()
            reply.ParseFromString(raw)
            if reply.WhichOneof("type") == "ref_hash":  # a message this client was sent before
                reply = cached.get(reply.ref_hash, reply)
            if reply.hash:
                cached[reply.hash] = reply
            kind = reply.WhichOneof("type")
            if kind == "navigation":  # the page this run drew (st.navigation's)
                self.page_hash = reply.navigation.page_script_hash
            if kind == "delta":
                self._read_delta(reply.delta, answer)
            elif kind == "auto_rerun":
                answer.auto_reruns[reply.auto_rerun.fragment_id] = reply.auto_rerun.interval
            elif kind == "script_finished":
                answer.finished = reply.script_finished in (ForwardMsg.FINISHED_SUCCESSFULLY,
                                                            ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
                if reply.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    break
        answer.seconds = time.perf_counter() - started
        self.widgets.update(answer.widgets)
        self._check(answer)
        return answer

    def _read_delta(self, delta, answer: Answer) -> None:
        if delta.WhichOneof("type") != "new_element":
            return
        element = delta.new_element
        kind = element.WhichOneof("type")
        if kind == "exception":
            answer.exceptions += 1
        elif kind == "bidi_component" and element.bidi_component.component_name.endswith(CHART_COMPONENT):
            answer.charts += 1
            answer.chart_bytes.append(_component_bytes(element.bidi_component))
        elif kind in ("text_input", "text_area", "number_input", "slider", "button", "radio"):
            widget = getattr(element, kind)
            answer.widgets[widget.label] = (kind, widget.id)
        elif kind == "metric":
            answer.texts.append(f"{element.metric.label}: {element.metric.body}")
        elif kind == "progress":
            answer.texts.append(element.progress.text)
        elif kind == "alert":
            answer.texts.append(element.alert.body)

    def _check(self, answer: Answer) -> None:
        """Errors and leaks: another student's tokens in a chart of this one's."""
        if not answer.finished:
            self.errors.append(f"{self.page}: the run did not finish")
        if answer.exceptions:
            self.errors.append(f"{self.page}: {answer.exceptions} exception(s)")
        for payload in answer.chart_bytes:
            others = {int(number) for number in re.findall(rb"s(\d+)[a-g]", payload)} - {self.number}
            self.leaks += bool(others)

    async def session(self, seconds: float, pause=(2.0, 5.0), until: asyncio.Event | None = None) -> None:
        """Open the app, then move at a human pace for ``seconds`` (and on until ``until`` is set): pads and text
        on random pages, sometimes a new architecture (the layers), sometimes a shared link (a page opened from
        its URL)."""
        await self.connect()
        try:
            self.answers.append(("open", await self.open_page("masks", self.link())))
            deadline = time.monotonic() + seconds
            moves = 0
            while time.monotonic() < deadline or (until is not None and not until.is_set()):
                await asyncio.sleep(self.rng.uniform(*pause))
                moves += 1
                choice = self.rng.random()
                if choice < 0.15:
                    kind, answer = "link", await self.open_page(self.rng.choice(PAGES), self.link(seed=moves))
                elif choice < 0.3:
                    kind, answer = "page", await self.open_page(self.rng.choice(PAGES), "")
                elif choice < 0.4 and "Layers (N)" in self.widgets:
                    kind, answer = "architecture", await self.move("Layers (N)", 1 + moves % 4)
                else:
                    pads = " ".join(["0", f"s{self.number}{'abcdefg'[moves % 7]}"])  # a new set each move
                    kind, answer = "pads", await self.move("Pad symbols", pads)
                self.answers.append((kind, answer))
        except (asyncio.TimeoutError, websockets.ConnectionClosed, OSError) as error:
            self.errors.append(f"{type(error).__name__}: {error}")
        finally:
            await self.close()


def _set_state(state, kind: str, value) -> None:
    """A widget's new value in a rerun request, as the browser writes it."""
    if kind in ("text_input", "text_area"):
        state.string_value = value
    elif kind == "number_input":
        state.int_value = int(value)
    elif kind == "radio":  # the option as the page formats it
        state.string_value = str(value)
    elif kind == "slider":
        state.double_array_value.data.extend([float(value)])
    elif kind == "button":
        state.trigger_value = bool(value)
    else:
        raise ValueError(f"cannot set a {kind}")


def _component_bytes(component) -> bytes:
    """A custom component's data as sent (bytes, or JSON text)."""
    which = component.WhichOneof("data")
    if which == "bytes":
        return component.bytes
    if which == "json":
        return component.json.encode()
    return b""
