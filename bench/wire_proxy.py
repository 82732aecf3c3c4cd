"""A loopback TCP proxy that timestamps the bytes between browsers and the Streamlit server.

The load test's clients share the machine's cores with the server, so times taken
inside a starved browser say little about the server. This proxy runs in its own
process at normal priority and notes when each burst of bytes passes, in each
direction: from a rerun request (client to server) to the last bytes of the answer.
It reads the server without waiting for the browser to take the bytes, so a slow
client does not stretch the server's times.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time

from browser_support import free_port


class _BackMessages:
    """Reads the client's WebSocket frames on one connection and names each Streamlit BackMsg.

    Client frames are masked (RFC 6455); each binary frame holds one protobuf ``BackMsg``.
    Anything before the end of the HTTP upgrade request is skipped.
    """

    def __init__(self):
        self.buffer = b""
        self.upgraded = False

    def feed(self, chunk: bytes) -> list[str]:
        self.buffer += chunk
        if not self.upgraded:
            if b"\r\n\r\n" not in self.buffer:
                return []
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            self.upgraded = head.startswith(b"GET") and b"websocket" in head.lower()
            if not self.upgraded:
                self.buffer = b""
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

    @staticmethod
    def _name(payload: bytes) -> str:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        message = BackMsg()
        try:
            message.ParseFromString(payload)
        except Exception:  # noqa: BLE001  (not a BackMsg: named as such)
            return "unparsed"
        return message.WhichOneof("type") or "empty"


def _serve(upstream_port: int, port: int, pipe) -> None:
    events = []  # (connection, monotonic time, "down" | the BackMsg type of a client frame, bytes)

    async def pump(reader, writer, connection, direction):
        messages = _BackMessages() if direction == "up" else None
        try:
            while chunk := await reader.read(65536):
                moment = time.monotonic()
                if messages is None:
                    events.append((connection, moment, direction, len(chunk)))
                else:
                    events.extend((connection, moment, name, len(chunk)) for name in messages.feed(chunk))
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


def answer_times(events, min_answer_bytes: int = 1000) -> list[float]:
    """Seconds from each slider move's rerun request (a ``rerun_script`` BackMsg) to the last byte of its answer.

    The answer is every byte the server sends on that connection until the next rerun
    request, counted when at least ``min_answer_bytes`` arrived. Requests sent before any
    answer (Streamlit folds them into one rerun) are timed from the first. A connection's first
    answered request is its page load, not a move (seconds, with eight pages loading at once): not timed,
    as the browser-side latencies do not time it either.
    """
    times, by_connection = [], {}
    for connection, moment, kind, size in sorted(events, key=lambda e: e[1]):
        if kind in ("down", "rerun_script"):
            by_connection.setdefault(connection, []).append((moment, kind, size))
    for chunks in by_connection.values():
        start = end = None
        answered, loaded = 0, False
        for moment, kind, size in chunks + [(float("inf"), "rerun_script", 0)]:
            if kind == "rerun_script":
                if start is not None and answered >= min_answer_bytes:
                    if loaded:
                        times.append(end - start)
                    loaded = True
                if start is None or answered:  # a request the server has not answered yet keeps its time
                    start, end, answered = moment, None, 0
            elif start is not None:
                end, answered = moment, answered + size
    return times
