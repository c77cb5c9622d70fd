"""Admin requests on the engine: CreateTopics, DeleteRecords, OffsetForLeaderEpoch and
DescribeConfigs (topic and broker resources, from the engine's LogConfig).

* CreateTopics (2-7): ``Cluster.create_topic`` with Kafka's dotted config names, -1 for the
  listener's ``num.partitions`` / ``default.replication.factor``, explicit assignments, and
  ``validate_only`` (``check``-style: the same checks, nothing created).
* DeleteRecords (0-2): at the leader, ``Log.delete_records`` (the log start offset moves up,
  bounded by the HW; followers follow it on their next fetch). Answered at once: Kafka waits
  for the followers' low watermarks in a purgatory; here the leader's is reported.
* OffsetForLeaderEpoch (2-4): the leader's ``endOffsetFor(epoch)`` from its leader-epoch
  cache, after the ``current_leader_epoch`` check (what a consumer asks after a leader
  change, KIP-320).
"""
from __future__ import annotations

from typing import Callable

from engine.cluster.log_dir import identity
from engine.errors import KafkaError

from .protocol import error_code, uuid_bytes

__all__ = ["ADMIN_HANDLERS"]


def create_topics(ctx, version: int, req: dict, respond: Callable) -> None:
    server, cluster = ctx.server, ctx.cluster
    results = []
    for t in req["topics"]:
        name = t["name"]
        parts = t["num_partitions"] if t["num_partitions"] != -1 else server.num_partitions
        alive = sum(1 for b in cluster.brokers.values() if b.alive)
        rf = t["replication_factor"] if t["replication_factor"] != -1 else \
            max(1, min(server.default_replication_factor, alive))
        assignment = {a["partition_index"]: list(a["broker_ids"]) for a in t["assignments"]} or None
        if assignment is not None:
            parts, rf = len(assignment), len(next(iter(assignment.values())))
        config = {c["name"]: c["value"] for c in t["configs"]}
        out = {"name": name, "topic_id": bytes(16), "error_code": 0, "error_message": None,
               "topic_config_error_code": 0, "num_partitions": -1, "replication_factor": -1, "configs": None}
        if name in cluster.controller.topics:
            out.update(error_code=error_code("TOPIC_ALREADY_EXISTS"), error_message=f"Topic '{name}' already exists.")
            results.append(out)
            continue
        try:
            if req["validate_only"]:
                from engine.config import LogConfig, config_from_mapping, validate_topic_name
                validate_topic_name(name)
                if config:
                    config_from_mapping(LogConfig, config, base=cluster.config.log)
                if not 1 <= rf <= len(cluster.brokers) or parts < 1:
                    raise _invalid(parts, rf, len(cluster.brokers))
            else:
                server.create_topic(name, parts, rf, config or None, assignment, via_request=True)
        except KafkaError as exc:
            out.update(error_code=error_code(_create_error(exc)), error_message=str(exc))
            results.append(out)
            continue
        out.update(num_partitions=parts, replication_factor=rf, configs=[],
                   topic_id=uuid_bytes(identity(cluster).topic_id(name)) if not req["validate_only"] else bytes(16))
        results.append(out)
    respond({"throttle_time_ms": 0, "topics": results})


def _invalid(parts: int, rf: int, brokers: int) -> KafkaError:
    from engine.errors import InvalidRequestError
    exc = InvalidRequestError(f"{parts} partitions with replication factor {rf} on {brokers} brokers")
    exc.wire_error = "INVALID_REPLICATION_FACTOR" if parts >= 1 else "INVALID_PARTITIONS"
    return exc


def _create_error(exc: KafkaError) -> str:
    """Kafka's CreateTopics errors for the engine's refusals."""
    wire = getattr(exc, "wire_error", None)
    if wire:
        return wire
    text = str(exc)
    if exc.name == "INVALID_CONFIG":
        return "INVALID_CONFIG"
    if exc.name == "INVALID_TOPIC_EXCEPTION":
        return "INVALID_TOPIC_EXCEPTION"
    if "replication factor" in text:
        return "INVALID_REPLICATION_FACTOR"
    if "partitions" in text:
        return "INVALID_PARTITIONS"
    if "assignment" in text or "replicas" in text:
        return "INVALID_REPLICA_ASSIGNMENT"
    return exc.name or "INVALID_REQUEST"


def delete_records(ctx, version: int, req: dict, respond: Callable) -> None:
    topics = []
    for t in req["topics"]:
        parts = []
        for p in t["partitions"]:
            part = ctx.broker.partitions.get((t["name"], p["partition_index"]))
            out = {"partition_index": p["partition_index"], "low_watermark": -1, "error_code": 0}
            if t["name"] not in ctx.cluster.controller.topics:
                out["error_code"] = error_code("UNKNOWN_TOPIC_OR_PARTITION")
            elif part is None or part.role != "leader":
                out["error_code"] = error_code("NOT_LEADER_OR_FOLLOWER")
            else:
                try:
                    out["low_watermark"] = part.log.delete_records(p["offset"])
                except KafkaError as exc:
                    out["error_code"] = error_code(exc.name)
            parts.append(out)
        topics.append({"name": t["name"], "partitions": parts})
    respond({"throttle_time_ms": 0, "topics": topics})


def offset_for_leader_epoch(ctx, version: int, req: dict, respond: Callable) -> None:
    topics = []
    for t in req["topics"]:
        parts = []
        for p in t["partitions"]:
            part = ctx.broker.partitions.get((t["topic"], p["partition"]))
            out = {"error_code": 0, "partition": p["partition"], "leader_epoch": -1, "end_offset": -1}
            if t["topic"] not in ctx.cluster.controller.topics:
                out["error_code"] = error_code("UNKNOWN_TOPIC_OR_PARTITION")
            elif part is None:
                out["error_code"] = error_code("NOT_LEADER_OR_FOLLOWER")
            else:
                current = p["current_leader_epoch"]
                err = part.error_for_epoch(current) if current >= 0 else (
                    None if part.role == "leader" else "NOT_LEADER_OR_FOLLOWER")
                if err is not None:
                    out["error_code"] = error_code(err)
                else:
                    epoch, end = part.log.leader_epoch_cache.end_offset_for(p["leader_epoch"], part.leo)
                    out["leader_epoch"], out["end_offset"] = epoch, end
            parts.append(out)
        topics.append({"topic": t["topic"], "partitions": parts})
    respond({"throttle_time_ms": 0, "topics": topics})


# DescribeConfigs: config sources and types, as Kafka numbers them
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 5
_TYPES = {bool: 1, str: 2, int: 5, float: 6}     # BOOLEAN, STRING, LONG, DOUBLE
TOPIC, BROKER = 2, 4


def _config_rows(config, overridden: set, source: int, keys, topic_level: bool) -> list:
    from dataclasses import fields
    rows = []
    for f in fields(config):
        name = f.metadata.get("kafka")
        if not name or (topic_level and name.startswith("log.")):
            continue
        if keys is not None and name not in keys:
            continue
        value = getattr(config, f.name)
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        rows.append({"name": name, "value": text, "read_only": False,
                     "config_source": source if (name in overridden or f.name in overridden) else DEFAULT_CONFIG,
                     "is_sensitive": False, "synonyms": [], "config_type": _TYPES.get(type(value), 0),
                     "documentation": None})
    return rows


def describe_configs(ctx, version: int, req: dict, respond: Callable) -> None:
    """Topic configs (overrides marked DYNAMIC_TOPIC_CONFIG) and a broker's (its per-broker
    overrides DYNAMIC_BROKER_CONFIG), from the engine's LogConfig with Kafka's names."""
    cluster = ctx.cluster
    results = []
    for r in req["resources"]:
        kind, name, keys = r["resource_type"], r["resource_name"], r["configuration_keys"]
        out = {"error_code": 0, "error_message": None, "resource_type": kind, "resource_name": name, "configs": []}
        if kind == TOPIC:
            meta = cluster.controller.topics.get(name)
            if meta is None:
                out.update(error_code=error_code("UNKNOWN_TOPIC_OR_PARTITION"),
                           error_message=f"Topic {name} does not exist")
            else:
                out["configs"] = _config_rows(meta.config, set(meta.config_changes), DYNAMIC_TOPIC_CONFIG,
                                              keys, True)
        elif kind == BROKER and name.lstrip("-").isdigit() and int(name) in cluster.brokers:
            b = cluster.brokers[int(name)]
            config = cluster.config.log.replace(**b.log_overrides) if b.log_overrides else cluster.config.log
            out["configs"] = _config_rows(config, set(b.log_overrides), DYNAMIC_BROKER_CONFIG, keys, False)
        else:
            out.update(error_code=error_code("INVALID_REQUEST"),
                       error_message=f"resource type {kind} {name!r} is not described here")
        results.append(out)
    respond({"throttle_time_ms": 0, "results": results})


ADMIN_HANDLERS = {19: create_topics, 21: delete_records, 23: offset_for_leader_epoch, 32: describe_configs}
