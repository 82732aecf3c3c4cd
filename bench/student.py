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
        self.page = page
        message = BackMsg()
        message.rerun_script.query_string = query
        message.rerun_script.page_name = page
        return await self._ask(message)

    async def move(self, label: str, value) -> Answer:
        """Set the widget labelled ``label`` to ``value`` (its state only, as the browser sends a change)."""
        kind, widget_id = self.widgets[label]
        message = BackMsg()
        state = message.rerun_script.widget_states.widgets.add()
        state.id = widget_id
        if kind in ("text_input", "text_area"):
            state.string_value = value
        elif kind == "number_input":
            state.int_value = int(value)
        elif kind == "slider":
            state.double_array_value.data.extend([float(value)])
        else:
            raise ValueError(f"cannot move a {kind} ({label!r})")
        message.rerun_script.page_name = self.page
        return await self._ask(message)

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
            if kind == "delta":
                self._read_delta(reply.delta, answer)
            elif kind == "script_finished":
                answer.finished = reply.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY
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
        elif kind in ("text_input", "text_area", "number_input", "slider"):
            widget = getattr(element, kind)
            answer.widgets[widget.label] = (kind, widget.id)

    def _check(self, answer: Answer) -> None:
        """Errors and leaks: another student's tokens in a chart of this one's."""
        if not answer.finished:
            self.errors.append(f"{self.page}: the run did not finish")
        if answer.exceptions:
            self.errors.append(f"{self.page}: {answer.exceptions} exception(s)")
        for payload in answer.chart_bytes:
            others = {int(number) for number in re.findall(rb"s(\d+)[a-g]", payload)} - {self.number}
            self.leaks += bool(others)

    async def session(self, seconds: float, pause=(2.0, 5.0)) -> None:
        """Open the app, then move at a human pace for ``seconds``: pads and text on random pages, sometimes
        a new architecture (the layers), sometimes a shared link (a page opened from its URL)."""
        await self.connect()
        try:
            self.answers.append(("open", await self.open_page("masks", self.link())))
            deadline = time.monotonic() + seconds
            moves = 0
            while time.monotonic() < deadline:
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


def _component_bytes(component) -> bytes:
    """A custom component's data as sent (bytes, or JSON text)."""
    which = component.WhichOneof("data")
    if which == "bytes":
        return component.bytes
    if which == "json":
        return component.json.encode()
    return b""
