"""A loopback TCP proxy that timestamps the bytes between browsers and the Streamlit server.

The load test's clients share the machine's cores with the server, so times taken
inside a starved browser say little about the server. This proxy runs in its own
process at normal priority and notes when each burst of bytes passes, in each
direction: from a rerun request (client to server) to the last bytes of the answer.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time

from browser_support import free_port


def _serve(upstream_port: int, port: int, pipe) -> None:
    events = []  # (connection, monotonic time, "up" | "down", bytes)

    async def pump(reader, writer, connection, direction):
        try:
            while chunk := await reader.read(65536):
                events.append((connection, time.monotonic(), direction, len(chunk)))
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def handle(client_reader, client_writer):
        connection = id(client_writer)
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
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


def answer_times(events, min_request_bytes: int = 64, min_answer_bytes: int = 1000) -> list[float]:
    """Seconds from each rerun request (client to server) to the last byte of its answer.

    A request is an upstream chunk of at least ``min_request_bytes`` (a rerun carries the
    widget states; heartbeats are a few bytes and are ignored); its answer is every
    downstream byte until the next request, counted when at least ``min_answer_bytes``.
    """
    times, by_connection = [], {}
    for connection, moment, direction, size in sorted(events, key=lambda e: e[1]):
        by_connection.setdefault(connection, []).append((moment, direction, size))
    for chunks in by_connection.values():
        start = end = None
        answered = 0
        for moment, direction, size in chunks + [(float("inf"), "up", min_request_bytes)]:
            if direction == "up" and size < min_request_bytes:
                continue
            if direction == "up":
                if start is not None and answered >= min_answer_bytes:
                    times.append(end - start)
                if start is None or answered:
                    start, end, answered = moment, None, 0
            elif start is not None:
                end, answered = moment, answered + size
    return times
