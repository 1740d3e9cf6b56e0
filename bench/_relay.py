"""The benches' byte-counting TCP relay, with an optional model of the link behind it.

Every process of a bench that takes connections sits behind one relay (an asyncio
TCP proxy on 127.0.0.1, in a thread), which counts the bytes it forwards each way.
With a `Link` (`--link RTT_MS:MBIT`) each direction of each connection also behaves
like a network link: a chunk leaves after the link has serialised everything before
it at MBIT megabit/s, and arrives RTT_MS / 2 later; the reader is held back once more
than `WINDOW_S` of data waits to be serialised, as a socket buffer would. Loopback
then stands in for a LAN or a WAN, the same for every design a bench compares.
`link_fidelity` measures how close a profile comes to its model, `relay_overhead` what
the relay itself costs without one.
"""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import socket
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_S = 0.05  # serialisation backlog a direction buffers before it stops reading
CHUNK = 1 << 16  # read size with a link: its store-and-forward unit
PLAIN_CHUNK = 1 << 20  # read size without one


@dataclass
class Counter:
    up: int = 0    # client -> process
    down: int = 0  # process -> client
    # One-way trips: a process sending after bytes reached it (or for the first time) is
    # one; what it sends before anything more reaches it belongs to the same trip,
    # however many reads and connections it takes: it crosses the links side by side,
    # and over a link pays half a round trip of latency once. A reply on another
    # connection (a chain's last stage answering its driver) is a trip of its own. So
    # the count follows cause and effect, not the order in which concurrent bytes pass
    # the relays. Relays name the processes: the same `owner` (the process listening: a
    # ring's last stage feeding its first and answering its driver) or the same `client`
    # (the process connecting: llama-bench writing to every RPC server in turn); an
    # unnamed side is its connection's own.
    trips: int = 0

    @property
    def round_trips(self) -> float:
        return self.trips / 2

    @property
    def total(self) -> int:
        return self.up + self.down


@dataclass(frozen=True)
class Link:
    rtt_ms: float
    mbit: float

    def wire_s(self, n: int) -> float:
        return n * 8 / (self.mbit * 1e6)

    @property
    def one_way_s(self) -> float:
        return self.rtt_ms / 2000

    def __str__(self) -> str:
        return f"{self.rtt_ms:g} ms round trip, {self.mbit:g} Mbit/s each way"


def parse_link(text: str) -> Link:
    """`RTT_MS:MBIT`, e.g. `0.5:1000` (a LAN) or `40:100` (a WAN); ValueError otherwise."""
    rtt, sep, mbit = text.partition(":")
    try:
        link = Link(float(rtt), float(mbit))
    except ValueError:
        link = None
    if not sep or link is None or not link.rtt_ms >= 0 or not link.mbit > 0:
        raise ValueError(f"--link takes RTT_MS:MBIT (RTT >= 0, MBIT > 0), not {text!r}")
    return link


def parse_profile(text: str) -> Link | None:
    """A link profile: `loopback` (no model) or `RTT_MS:MBIT`."""
    return None if text == "loopback" else parse_link(text)


def profile_label(link: Link | None) -> str:
    """`loopback`, `1ms`, `20ms`: how targets name a profile."""
    return "loopback" if link is None else f"{link.rtt_ms:g}ms"


class Relays:
    """TCP proxies on 127.0.0.1, one per upstream process, on one asyncio loop in a
    thread; each counts the bytes it forwards each way, over all its connections,
    and with a link delays and paces them as that link would."""

    def __init__(self, link: Link | None = None) -> None:
        self.link = link
        # select() waits to the microsecond; epoll, asyncio's default, rounds each wait
        # up to a whole millisecond, which delivered every chunk of a 1 ms link about
        # 0.7 ms late (a 4 KiB round trip took 2.5 ms, not 1.07; link_fidelity now
        # measures about 1.6). A bench has a few dozen sockets: select's limit is far.
        self.loop = asyncio.SelectorEventLoop(selectors.SelectSelector())
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.servers: list[asyncio.base_events.Server] = []
        # each process that has sent: whether bytes reached it since (a new trip if so)
        self._reached: dict[object, bool] = {}
        self._connections = 0

    def _reach(self, receiver: object) -> None:
        if receiver in self._reached:
            self._reached[receiver] = True

    async def _pipe(self, r: asyncio.StreamReader, w: asyncio.StreamWriter, counter: Counter,
                    upward: bool, sender: object, receiver: object) -> None:
        loop = asyncio.get_running_loop()
        link = self.link
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

        async def deliver() -> None:
            while (item := await queue.get()) is not None:
                at, data = item
                if (wait := at - loop.time()) > 0:
                    await asyncio.sleep(wait)
                w.write(data)
                self._reach(receiver)  # it can answer from now on, not before
                await w.drain()

        delivery = asyncio.ensure_future(deliver()) if link is not None else None
        free_at = 0.0  # when this direction has serialised all it was given
        try:
            while data := await r.read(CHUNK if link is not None else PLAIN_CHUNK):
                if upward:
                    counter.up += len(data)
                else:
                    counter.down += len(data)
                if self._reached.get(sender, True):
                    counter.trips += 1
                    self._reached[sender] = False
                if link is None:
                    w.write(data)
                    self._reach(receiver)
                    await w.drain()
                    continue
                free_at = max(loop.time(), free_at) + link.wire_s(len(data))
                queue.put_nowait((free_at + link.one_way_s, data))
                if (backlog := free_at - loop.time()) > WINDOW_S:
                    await asyncio.sleep(backlog - WINDOW_S)
        except (ConnectionError, OSError):
            pass
        finally:
            if delivery is not None:
                queue.put_nowait(None)
                with contextlib.suppress(ConnectionError, OSError):
                    await delivery
            w.close()

    def add(self, port: int, owner: str | None = None,
            client: str | None = None) -> tuple[int, Counter]:
        """A relay to the process listening on `port`; the relays of one `owner` (a
        process with several listeners) count what it sends on all of them as one flow,
        and those of one `client` (a process connecting to several) what it sends on all
        its connections through them."""
        counter = Counter()

        async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
            try:
                ur, uw = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                cw.close()
                return
            for w in (cw, uw):
                sock = w.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connections += 1
            conn = self._connections
            try:
                me = (conn, "client") if client is None else client
                it = (conn, "owner") if owner is None else owner
                await asyncio.gather(self._pipe(cr, uw, counter, True, me, it),
                                     self._pipe(ur, cw, counter, False, it, me))
            except asyncio.CancelledError:
                # close(): ending normally, since Python 3.11's stream callback
                # reports a cancelled connection task as an error.
                return

        async def start() -> asyncio.base_events.Server:
            return await asyncio.start_server(handle, "127.0.0.1", 0)

        server = asyncio.run_coroutine_threadsafe(start(), self.loop).result()
        self.servers.append(server)
        return server.sockets[0].getsockname()[1], counter

    def close(self) -> None:
        async def shut() -> None:
            for s in self.servers:
                s.close()
            # Open connections end too (their sockets close), not only the listeners.
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def start_echo() -> socket.socket:
    """A TCP echo server on 127.0.0.1 (one thread per connection), to measure a relay
    against; its port is `getsockname()[1]`, and closing it stops it."""
    def echo(c: socket.socket) -> None:
        while data := c.recv(1 << 20):
            c.sendall(data)

    return _serve(echo)


def start_sink() -> socket.socket:
    """A TCP server on 127.0.0.1 that reads everything and answers nothing, as a stage
    of a direct chain answers its previous hop; closing it stops it."""
    def swallow(c: socket.socket) -> None:
        while c.recv(1 << 20):
            pass

    return _serve(swallow)


def _serve(handle: Callable[[socket.socket], None]) -> socket.socket:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def run(c: socket.socket) -> None:
        with c:
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            handle(c)

    def serve() -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=run, args=(c,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return srv


def echo_rtt(port: int, n: int, size: int = 64) -> list[float]:
    """Round trips, in seconds, of `size` bytes through 127.0.0.1:`port` to an echo."""
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(n):
            t0 = time.perf_counter()
            s.sendall(b"x" * size)
            got = 0
            while got < size:
                chunk = s.recv(min(size - got, 1 << 16))
                if not chunk:
                    raise ConnectionError(f"127.0.0.1:{port} closed after {got} of {size} bytes")
                got += len(chunk)
            out.append(time.perf_counter() - t0)
    return out


def link_fidelity(link: Link, n: int = 20, size: int = 4096) -> dict[str, float]:
    """How closely the relays model `link`: the round trip of a boundary-sized message
    (4 KiB) to a local echo behind a relay with that link, against the model's (the
    round trip plus serialising it each way); the median of `n`. What a relay adds
    beyond the model, every design pays on every one-way trip (about half of it)."""
    relays = Relays(link)
    srv = start_echo()
    try:
        rport, _ = relays.add(srv.getsockname()[1])
        measured = statistics.median(echo_rtt(rport, n, size)) * 1e3
    finally:
        srv.close()
        relays.close()
    model = link.rtt_ms + 2 * link.wire_s(size) * 1e3
    return {"bytes": size, "model_rtt_ms": round(model, 3), "measured_rtt_ms": round(measured, 3),
            "excess_ms": round(measured - model, 3)}


def relay_overhead() -> dict[str, float]:
    """The relay's own cost (without a --link model), against a local echo: round trip
    of 64 bytes direct and relayed, and the relayed throughput of one 256 MiB transfer
    each way."""
    relays = Relays()
    srv = start_echo()
    port = srv.getsockname()[1]
    rport, _ = relays.add(port)

    def bulk(p: int, total: int = 256 << 20) -> float:
        with socket.create_connection(("127.0.0.1", p)) as s:
            chunk = b"\0" * (1 << 20)
            t0 = time.perf_counter()
            done = threading.Event()

            def drain() -> None:
                got = 0
                while got < total:
                    got += len(s.recv(1 << 20))
                done.set()

            threading.Thread(target=drain, daemon=True).start()
            for _ in range(total // len(chunk)):
                s.sendall(chunk)
            done.wait(120)
            return total / (time.perf_counter() - t0)

    out = {"rtt_direct_us": statistics.fmean(echo_rtt(port, 2000)) * 1e6,
           "rtt_relayed_us": statistics.fmean(echo_rtt(rport, 2000)) * 1e6,
           "bulk_relayed_MBps": bulk(rport) / 1e6}
    srv.close()
    relays.close()
    return out
