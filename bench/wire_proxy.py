"""A loopback TCP proxy that timestamps the bytes between browsers and the Streamlit server.

The load test's clients share the machine's cores with the server, so times taken
inside a starved browser say little about the server. This proxy runs in its own
process at normal priority and reads the Streamlit messages in each direction's WebSocket
frames: an answer runs from a rerun request (client to server) to the server's message that
the rerun finished. It reads the server without waiting for the browser to take the bytes,
so a slow client does not stretch the server's times.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time

from browser_support import free_port


class _Messages:
    """Reads one direction of one connection's WebSocket frames and names each Streamlit message.

    Client frames are masked (RFC 6455) and hold a protobuf ``BackMsg``, named by its type
    (``rerun_script`` …). Server frames hold a ``ForwardMsg``: ``script_finished`` (a run that
    finished, not one stopped for the next rerun), or its type. Control frames (ping, pong, close)
    are named ``opcode N``. Nothing is read before the WebSocket upgrade (the client's GET, the
    server's 101), nor on a connection that is plain HTTP (static files).
    """

    def __init__(self, direction: str = "up"):
        self.direction = direction
        self.buffer = b""
        self.upgraded = False
        self.plain = False

    def feed(self, chunk: bytes) -> list[str]:
        if self.plain:
            return []
        self.buffer += chunk
        if not self.upgraded:
            if b"\r\n\r\n" not in self.buffer:
                return []
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            self.upgraded = (head.startswith(b"GET") and b"websocket" in head.lower() if self.direction == "up"
                             else head.startswith(b"HTTP/1.1 101"))
            if not self.upgraded:
                self.plain, self.buffer = True, b""
                return []
        names = []
        while (frame := self._next_frame()) is not None:
            opcode, payload = frame
            names.append(self._name(payload) if opcode == 2 else f"opcode {opcode}")
        return names

    def _next_frame(self):
        data = self.buffer
        if len(data) < 2:
            return None
        opcode, length, offset = data[0] & 0x0F, data[1] & 0x7F, 2
        if length == 126:
            length, offset = int.from_bytes(data[2:4], "big"), 4
        elif length == 127:
            length, offset = int.from_bytes(data[2:10], "big"), 10
        masked = bool(data[1] & 0x80)
        key_end = offset + (4 if masked else 0)
        if len(data) < key_end + length:
            return None
        payload = data[key_end:key_end + length]
        if masked:
            key = data[offset:key_end]
            payload = bytes(byte ^ key[i % 4] for i, byte in enumerate(payload))
        self.buffer = data[key_end + length:]
        return opcode, payload

    def _name(self, payload: bytes) -> str:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        message = BackMsg() if self.direction == "up" else ForwardMsg()
        try:
            message.ParseFromString(payload)
        except Exception:  # noqa: BLE001  (not a Streamlit message: named as such)
            return "unparsed"
        kind = message.WhichOneof("type") or "empty"
        if kind == "script_finished" and message.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            return "script_stopped_for_rerun"
        return kind


def _serve(upstream_port: int, port: int, pipe) -> None:
    events = []  # (connection, monotonic time, the name of a message read: see _Messages)

    async def pump(reader, writer, connection, direction):
        messages = _Messages(direction)
        try:
            while chunk := await reader.read(65536):
                moment = time.monotonic()
                events.extend((connection, moment, name) for name in messages.feed(chunk))
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def handle(client_reader, client_writer):
        connection = id(client_writer)
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        # Read the server as fast as it writes, however slowly a starved browser reads: otherwise the
        # times would include the client's back-pressure (the proxy buffers up to 256 MB instead).
        client_writer.transport.set_write_buffer_limits(high=256 * 2**20)
        await asyncio.gather(pump(client_reader, server_writer, connection, "up"),
                             pump(server_reader, client_writer, connection, "down"))

    def answer_requests():
        while pipe.recv() == "take":
            taken, events[:] = list(events), []
            pipe.send(taken)

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        pipe.send("ready")
        async with server:
            await server.serve_forever()

    threading.Thread(target=answer_requests, daemon=True).start()
    asyncio.run(main())


class WireProxy:
    """``with WireProxy(8501) as proxy:`` browse ``proxy.url``; ``proxy.take()`` -> events so far."""

    def __init__(self, upstream_port: int):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._pipe, child = multiprocessing.Pipe()
        self._process = multiprocessing.Process(target=_serve, args=(upstream_port, self.port, child), daemon=True)

    def __enter__(self):
        self._process.start()
        assert self._pipe.recv() == "ready"
        return self

    def take(self) -> list:
        self._pipe.send("take")
        return self._pipe.recv()

    def __exit__(self, *exc):
        self._process.terminate()
        self._process.join(5)


def answer_times(events) -> list[float]:
    """Seconds from each slider move's rerun request (a ``rerun_script`` BackMsg) to the server's
    ``script_finished`` for it, on the same connection.

    Requests sent before the run they asked for has finished (Streamlit stops that run and starts
    again) are timed from the first. A connection's first answer is its page load, not a move
    (seconds, with eight pages loading at once): not timed, as the browser-side latencies do not time
    it either. Other server frames (pings, messages between runs) end nothing: counted by bytes,
    they used to stretch an answer to whatever small frame came before the next move.
    """
    times, by_connection = [], {}
    for connection, moment, kind in sorted(events, key=lambda e: e[1]):
        by_connection.setdefault(connection, []).append((moment, kind))
    for messages in by_connection.values():
        requested, loaded = None, False
        for moment, kind in messages:
            if kind == "rerun_script" and requested is None:
                requested = moment
            elif kind == "script_finished" and requested is not None:
                if loaded:
                    times.append(moment - requested)
                requested, loaded = None, True
    return times
