"""``python -m wire --brokers 3 --port 9092 --data-dir DIR``: serve an engine cluster to
real Kafka clients. The first line printed is the bootstrap address."""
from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from .server import WireServer


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m wire", description=__doc__)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--port", type=int, default=9092, help="broker 0's port; broker N listens on port + N")
    p.add_argument("--host", default="127.0.0.1")
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
                        record_path=None if args.no_record else args.data_dir / "requests.jsonl")
    server.recorder.keep = False
    for spec in args.topic:
        name, parts, rf = spec.split(":")
        server.create_topic(name, int(parts), int(rf))
    await server.start()
    print(server.bootstrap, flush=True)
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
