"""``--advertise HOST[:PORT]``: a listener behind a proxy or NAT tells clients the proxy's
addresses in Metadata (Kafka's advertised.listeners), so a client that bootstraps through the
proxy keeps talking through it, to the leader too."""
from __future__ import annotations

import random
import re
import socket
import subprocess
import sys
import threading

import pytest

from wire.__main__ import parse_advertise
from wire.threaded import Listener

from test_wire_listener import API_VERSIONS, METADATA, _frame, _read_frame
from wire.codec import ResponseHeader, codec


class Proxy:
    """Loopback TCP forwarders on ``n`` consecutive ports: port base + b forwards to ``targets[b]``
    (set once the listener behind it is bound). ``seen[b]`` counts the bytes clients sent
    through port base + b."""

    def __init__(self, n: int) -> None:
        self.targets: dict[int, tuple[str, int]] = {}
        self.seen = {b: 0 for b in range(n)}
        self.socks: list[socket.socket] = []
        for _ in range(50):
            base = random.randrange(20_000, 60_000)
            try:
                for b in range(n):
                    s = socket.socket()
                    self.socks.append(s)
                    s.bind(("127.0.0.1", base + b))
                    s.listen()
                self.base = base
                break
            except OSError:
                self.close()
        else:
            raise RuntimeError("no free consecutive ports for the proxy")
        for b, s in enumerate(self.socks):
            threading.Thread(target=self._accept, args=(b, s), daemon=True).start()

    def _accept(self, b: int, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.targets[b])
            threading.Thread(target=self._pump, args=(client, upstream, b), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, None), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, count_for: int | None) -> None:
        try:
            while data := src.recv(65536):
                if count_for is not None:
                    self.seen[count_for] += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        for s in self.socks:
            s.close()
        self.socks = []


def test_the_advertise_option_reads_host_and_port():
    assert parse_advertise("proxy.example:19092") == ("proxy.example", 19092)
    assert parse_advertise("proxy.example") == ("proxy.example", None)
    assert parse_advertise("[::1]:9000") == ("::1", 9000)
    assert parse_advertise("::1") == ("::1", None)
    for bad in ("proxy:0", "proxy:x", ":9092"):
        with pytest.raises(Exception):
            parse_advertise(bad)


def test_a_client_behind_a_proxy_produces_through_it_to_the_leader(tmp_path):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    proxy = Proxy(3)
    lst = Listener(tmp_path, brokers=3, advertise=("127.0.0.1", proxy.base)).start()
    proxy.targets = dict(lst.server.listening)
    try:
        assert lst.bootstrap == ",".join(f"127.0.0.1:{proxy.base + b}" for b in range(3))
        lst.call(lambda s: s.create_topic("behind", 3, 1))
        leaders = lst.call(lambda s: {p: s.cluster.controller.partition("behind", p).leader for p in range(3)})
        p = confluent_kafka.Producer({"bootstrap.servers": f"127.0.0.1:{proxy.base}", "acks": "1"})
        for i in range(3):
            p.produce("behind", f"v{i}".encode(), partition=i)
        assert p.flush(30) == 0
        # Every leader got its Produce through the proxy: the client connected where Metadata said.
        for b in set(leaders.values()):
            assert proxy.seen[b] > 0, (b, proxy.seen)
        written = lst.call(lambda s: sum(len(list(s.cluster.log_values(leaders[i], "behind", i))) for i in range(3)))
        assert written == 3
    finally:
        lst.stop()
        proxy.close()


def test_python_m_wire_advertises_the_given_address_and_listens_on_its_own(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "wire", "--brokers", "2", "--port", "0", "--data-dir",
                             str(tmp_path), "--advertise", "proxy.example:19092"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "proxy.example:19092,proxy.example:19093"
        bound = re.search(r"listening on (\S+);", proc.stderr.readline()).group(1).split(",")
        host, port = bound[1].split(":")
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(_frame(API_VERSIONS, 0, b"", correlation_id=9))
            assert int.from_bytes(_read_frame(s)[:4], "big") == 9
            s.sendall(_frame(METADATA, 12, codec("MetadataRequest", 12).encode({"topics": []}), flexible=True))
            data = _read_frame(s)
            _, pos = ResponseHeader.decode(data, 1)
            body, _ = codec("MetadataResponse", 12).decode(data, pos)
        assert {(b["node_id"], b["host"], b["port"]) for b in body["brokers"]} == {
            (0, "proxy.example", 19092), (1, "proxy.example", 19093)}
    finally:
        proc.terminate()
        proc.wait(10)
