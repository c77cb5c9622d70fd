"""``python -m wire --brokers 3 --port 9092 --data-dir DIR``: serve an engine cluster to
real Kafka clients. The first line printed is the bootstrap address."""
from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from .server import WireServer


def parse_advertise(text: str) -> tuple[str, int | None]:
    """``HOST``, ``HOST:PORT`` or ``[IPv6]:PORT``."""
    host, sep, port = text.rpartition(":")
    if not sep or (text.startswith("[") and not host.endswith("]")) or (":" in host and not host.startswith("[")):
        host, port = text, ""          # no port: a bare host or IPv6 address
    host = host.strip("[]") if host.startswith("[") else host
    if not host:
        raise argparse.ArgumentTypeError(f"no host in {text!r}")
    if not port:
        return host, None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"port {port!r} is not a number from 1 to 65535")
    return host, int(port)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m wire", description=__doc__)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--port", type=int, default=9092, help="broker 0's port; broker N listens on port + N")
    p.add_argument("--host", default="127.0.0.1", help="the address the brokers' sockets bind")
    p.add_argument("--advertise", type=parse_advertise, default=None, metavar="HOST[:PORT]",
                   help="what Metadata tells clients (Kafka's advertised.listeners), for a listener behind a proxy "
                        "or NAT: broker N advertises HOST:(PORT + N), or HOST with its own port when none is given; "
                        "by default the bound address")
    p.add_argument("--data-dir", required=True, type=Path)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--partitions", type=int, default=1, help="num.partitions of auto-created topics")
    p.add_argument("--replication-factor", type=int, default=1,
                   help="default.replication.factor of auto-created topics")
    p.add_argument("--no-auto-create", action="store_true", help="auto.create.topics.enable=false")
    p.add_argument("--topic", action="append", default=[], metavar="NAME:PARTITIONS:RF",
                   help="create a topic at start (repeatable)")
    p.add_argument("--latency-ms", type=int, default=1, help="the engine network's one-way latency")
    p.add_argument("--no-record", action="store_true", help="do not write requests.jsonl in the data dir")
    return p.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    server = WireServer(args.data_dir, brokers=args.brokers, host=args.host, port=args.port, seed=args.seed,
                        auto_create_topics=not args.no_auto_create, num_partitions=args.partitions,
                        default_replication_factor=args.replication_factor, network_latency_ms=args.latency_ms,
                        record_path=None if args.no_record else args.data_dir / "requests.jsonl",
                        advertise=args.advertise)
    server.recorder.keep = False
    for spec in args.topic:
        name, parts, rf = spec.split(":")
        server.create_topic(name, int(parts), int(rf))
    await server.start()
    print(server.bootstrap, flush=True)
    if args.advertise is not None:
        bound = ",".join(f"{h}:{p}" for _, (h, p) in sorted(server.listening.items()))
        print(f"listening on {bound}; Metadata advertises {server.bootstrap}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)      # SIGINT too: a background job ignores it by default
    try:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), 1)
            except asyncio.TimeoutError:
                pass
            server.recorder.flush()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
