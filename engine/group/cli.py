"""``python -m engine assign``: run one partition assignor on a group given as JSON.

    python -m engine assign --strategy range \\
        --members '{"c1": ["orders"], "c2": ["orders"]}' --partitions '{"orders": 5}' \\
        [--previous '{"c1": [["orders", 0], ["orders", 1]]}']

Prints ``{"member": [["topic", partition], …]}`` with members in the order given (the join
order, which the sticky assignors' Java hash-map iteration depends on). ``--previous`` is
what each member owns now (generation 1); members absent from it own nothing. Malformed
JSON (or JSON nested deeper than ``engine.json_input.MAX_DEPTH``), a group larger than the
limits below or an impossible one is a usage error: ``error: <message>`` in one line, exit 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .. import json_input
from ..errors import InvalidRequestError
from .assignors import STRATEGIES, Subscription, assign

__all__ = ["add_subcommands", "parse_group"]


def add_subcommands(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "assign", help="run a partition assignor (range, roundrobin, sticky, cooperative-sticky) on a group",
        description="Compute the assignment Kafka's consumer group leader would send for these members, "
                    "subscriptions and partition counts.")
    p.add_argument("--strategy", required=True, choices=STRATEGIES, help="the assignor")
    p.add_argument("--members", required=True, metavar="JSON",
                   help='members and their topics, in join order: {"member-id": ["topic", …]}')
    p.add_argument("--partitions", required=True, metavar="JSON", help='partition counts: {"topic": count}')
    p.add_argument("--previous", default=None, metavar="JSON",
                   help='partitions each member owns now: {"member-id": [["topic", partition], …]}')
    p.set_defaults(func=_cmd_assign, assign_parser=p)


#: The command line's limits: far beyond a lesson's group, well inside a second of assignor time.
MAX_MEMBERS = 10_000
MAX_PARTITIONS = 100_000
MAX_SUBSCRIPTIONS = 1_000_000   # member-topic pairs


def _load(text: str, what: str) -> Any:
    return json_input.loads(text, f"--{what}")


def _check_sizes(members: dict, partitions: dict, previous: dict) -> None:
    if len(members) > MAX_MEMBERS:
        raise InvalidRequestError(f"--members has {len(members)} members; at most {MAX_MEMBERS} are accepted")
    total = sum(partitions.values())
    if total > MAX_PARTITIONS:
        raise InvalidRequestError(f"--partitions adds up to {total} partitions; at most {MAX_PARTITIONS} in all "
                                  "are accepted")
    pairs = sum(len(v) for v in members.values())
    if pairs > MAX_SUBSCRIPTIONS:
        raise InvalidRequestError(f"--members lists {pairs} member-topic subscriptions; at most {MAX_SUBSCRIPTIONS} "
                                  "are accepted")
    owned = sum(len(v) for v in previous.values())
    if owned > MAX_PARTITIONS:
        raise InvalidRequestError(f"--previous lists {owned} owned partitions; at most {MAX_PARTITIONS} are accepted")


def parse_group(members_json: str, partitions_json: str, previous_json: str | None = None
                ) -> tuple[dict[str, Subscription], dict[str, int]]:
    """The CLI's three JSON arguments as assignor inputs; InvalidRequestError names the problem."""
    members = _load(members_json, "members")
    partitions = _load(partitions_json, "partitions")
    previous = _load(previous_json, "previous") if previous_json is not None else {}
    if not isinstance(members, dict) or not all(
            isinstance(v, list) and all(isinstance(t, str) and t for t in v) for v in members.values()):
        raise InvalidRequestError('--members must be an object of member id -> list of topic names, '
                                  'e.g. {"c1": ["orders"]}')
    if not isinstance(partitions, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in partitions.values()):
        raise InvalidRequestError('--partitions must be an object of topic -> non-negative partition count, '
                                  'e.g. {"orders": 3}')
    if not isinstance(previous, dict) or not all(
            isinstance(v, list) and all(isinstance(tp, list) and len(tp) == 2 and isinstance(tp[0], str)
                                        and isinstance(tp[1], int) and not isinstance(tp[1], bool) for tp in v)
            for v in previous.values()):
        raise InvalidRequestError('--previous must be an object of member id -> list of ["topic", partition] '
                                  'pairs, e.g. {"c1": [["orders", 0]]}')
    _check_sizes(members, partitions, previous)
    unknown = [m for m in previous if m not in members]
    if unknown:
        raise InvalidRequestError(f"--previous names member(s) {', '.join(map(repr, unknown))} "
                                  "that are not in --members")
    subs = {}
    for m, topics in members.items():
        owned = tuple((t, p) for t, p in previous.get(m, []))
        subs[m] = Subscription(tuple(dict.fromkeys(topics)), owned, 1 if m in previous else -1)
    return subs, partitions


def _cmd_assign(args: argparse.Namespace) -> int:
    try:
        subs, partitions = parse_group(args.members, args.partitions, args.previous)
        result = assign(args.strategy, subs, partitions)
    except InvalidRequestError as exc:
        print(f"error: {exc}", file=sys.stderr)  # one line; exit 2, a usage error
        return 2
    print(json.dumps({m: [[t, p] for t, p in tps] for m, tps in result.items()}))
    return 0
