"""Command-line entry points for replicated runs: ``python -m engine run`` and
``python -m engine scenario list|run``.

``engine/cli.py`` (the top-level parser) calls :func:`add_subcommands`; each parser
sets ``func`` to a handler ``handler(args) -> int``. Engine errors become
``error: …`` on stderr and exit status 1; argument errors are argparse usage errors
(exit 2). A handler never lets a traceback reach the user.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from typing import Any

from ..errors import KafkaError
from ..json_input import decode_utf8

__all__ = ["add_subcommands", "run_command", "scenario_command", "main"]


#: A command log the command line runs: far beyond the 600-command fault schedules, well inside memory.
MAX_COMMANDS = 100_000
MAX_COMMAND_LOG_BYTES = 64 << 20


def add_subcommands(subparsers: Any) -> None:
    """Add the ``run`` and ``scenario`` sub-commands to an argparse sub-parser set."""
    run = subparsers.add_parser(
        "run", help="execute a command log (JSONL) on a replicated cluster",
        description="Execute a command log (one JSON command per line) on a fresh replicated "
                    "cluster and print a summary: per replica log, LEO, HW, epoch cache, "
                    "leader, ISR, acknowledged records and the checker's findings.")
    run.add_argument("--commands", required=True, metavar="FILE.jsonl",
                     help="command log, one JSON object per line ('-' reads stdin)")
    run.add_argument("--brokers", type=int, default=None, help="number of brokers (default: header's, or 3)")
    _add_common(run)
    run.set_defaults(func=run_command)

    scenario = subparsers.add_parser("scenario", help="list or run a named replication scenario")
    sub = scenario.add_subparsers(dest="scenario_action", metavar="{list,run}")
    sub.required = True
    lst = sub.add_parser("list", help="list the named scenarios")
    lst.add_argument("--json", action="store_true", help="print JSON instead of text")
    lst.set_defaults(func=scenario_command)
    srun = sub.add_parser("run", help="run one named scenario")
    srun.add_argument("name", help="scenario name (see 'scenario list')")
    _add_common(srun)
    srun.set_defaults(func=scenario_command)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=None, help="RNG seed (default: the scenario's, or 0)")
    p.add_argument("--truncation", choices=("hw", "epoch"), default=None,
                   help="follower truncation rule: 'hw' (pre-KIP-101) or 'epoch' (default)")
    p.add_argument("--fetch-protocol", choices=("offsets_for_leader_epoch", "diverging_epoch"), default=None,
                   help="how an epoch follower finds its divergence: an OffsetsForLeaderEpoch round trip "
                        "(Kafka 0.11-2.6, the default) or Fetch v12's DivergingEpoch (Kafka >= 2.7)")
    p.add_argument("--kraft", action="store_true", default=None,
                   help="run the controller as Kafka 4 does: a Raft quorum keeping __cluster_metadata, in combined "
                        "mode (the voters are brokers 0-2, or controller.quorum.voters)")
    p.add_argument("--controllers", type=int, default=None, metavar="N",
                   help="dedicated KRaft mode: N controller nodes (ids 100, 101, ...) beside the brokers")
    p.add_argument("--data-dir", default=None, help="directory for broker data (default: a temporary one)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


def run_command(args: argparse.Namespace) -> int:
    from .run import load_command_log, run_commands
    source = "stdin" if args.commands == "-" else args.commands
    try:
        if args.commands == "-":
            data = sys.stdin.buffer.read(MAX_COMMAND_LOG_BYTES + 1)
        else:
            with open(args.commands, "rb") as fh:
                data = fh.read(MAX_COMMAND_LOG_BYTES + 1)
    except OSError as exc:
        return _fail(f"cannot read {args.commands}: {exc.strerror or exc}")
    if len(data) > MAX_COMMAND_LOG_BYTES:
        return _fail(f"{source} is larger than {MAX_COMMAND_LOG_BYTES // (1 << 20)} MiB; a command log is at most "
                     f"{MAX_COMMANDS} commands")
    try:
        commands = load_command_log(decode_utf8(data, source))
        if len(commands.commands) > MAX_COMMANDS:
            return _fail(f"{source} holds {len(commands.commands)} commands; at most {MAX_COMMANDS} are run")
        with _data_dir(args.data_dir) as root:
            summary = run_commands(commands, seed=args.seed,
                                   truncation=args.truncation, brokers=args.brokers,
                                   disk_root=root, fetch_protocol=args.fetch_protocol,
                                   kraft=args.kraft, controllers=args.controllers)
    except KafkaError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename or args.data_dir}")
    _print_summary(summary, args.json)
    return 0


def scenario_command(args: argparse.Namespace) -> int:
    from .scenarios import SCENARIOS, get_scenario, run_scenario
    if args.scenario_action == "list":
        rows = [{"name": s.name, "title": s.title, "summary": s.summary,
                 "expected": {m: s.expected[m].to_dict() for m in sorted(s.expected)}}
                for s in SCENARIOS.values()]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            width = max(len(r["name"]) for r in rows)
            for r in rows:
                print(f"{r['name']:<{width}}  {r['title']}")
        return 0
    try:
        scenario = get_scenario(args.name)
        with _data_dir(args.data_dir) as root:
            outcome = run_scenario(scenario, truncation=args.truncation or "epoch", seed=args.seed,
                                   disk_root=root, fetch_protocol=args.fetch_protocol,
                                   kraft=args.kraft, controllers=args.controllers)
    except KafkaError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename or args.data_dir}")
    _print_summary(outcome, args.json)
    return 0


class _data_dir:
    """Context manager: the given directory, or a temporary one removed afterwards."""

    def __init__(self, path: str | None) -> None:
        self.path, self._tmp = path, None

    def __enter__(self) -> str:
        if self.path:
            return self.path
        self._tmp = tempfile.TemporaryDirectory(prefix="kafkaviz-run-")
        return self._tmp.name

    def __exit__(self, *exc: Any) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


def _print_summary(summary: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2, sort_keys=True))
        return
    from .run import format_summary
    print(format_summary(summary))


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m engine.cluster.cli``), same sub-commands."""
    parser = argparse.ArgumentParser(prog="python -m engine")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
