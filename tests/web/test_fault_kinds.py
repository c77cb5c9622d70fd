"""One declaration per fault kind (issue 18): ``Command.fault`` and the fields marked
``node`` in engine/cluster/commands.py make the fault panel's buttons (which panel, label,
key, greying), say where a classroom preset may put a role, and docs/commands.md's "Fault
kinds" table agrees with them. Also one validation: the web's acks choices and set_config
form are the engine's, and a command sent in the old ``type`` envelope gets one clear line."""
from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client

from engine.cluster.commands import ACKS, COMMANDS, faults, node_fields, parse_command
from kafkaviz.asgi import application
from kafkaviz.classroom import presets
from kafkaviz.live.kinds import get_kind
from kafkaviz.live.validation import CommandError, validate_command
from kafkaviz.live.views import fault_panel
from kafkaviz.lessons.content import load_content

from .conftest import ORIGIN
from .framing import TrackedCommunicator

DOCS = Path(__file__).resolve().parents[2] / "docs" / "commands.md"


def test_the_docs_fault_table_is_the_declarations():
    section = DOCS.read_text().split("\n## Fault kinds\n")[1].split("\n## ")[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| (.*?) \| (.*?) \| (.*?) \| (.*?) \|$", section, flags=re.M)
    documented = {name: (label, key.strip("`"), target, needs) for name, label, key, target, needs in rows}
    declared = {name: (cls.fault.label.en, cls.fault.key or "—", ", ".join(f"`{n}`" for n in node_fields(cls)),
                       cls.fault.needs or "—") for name, cls in faults().items()}
    assert documented == declared


def test_every_fault_has_a_target_and_a_panel():
    assert faults(), "the cluster has fault kinds"
    for name, cls in faults().items():
        assert node_fields(cls), name
        assert fault_panel(cls) in ("broker", "link", "own"), name
    assert fault_panel(COMMANDS["crash"]) == "broker" and fault_panel(COMMANDS["cut_link"]) == "link"
    assert fault_panel(COMMANDS["slow_follower"]) == "own"      # it needs a delay: its own form


def test_the_page_draws_the_buttons_the_declarations_say(client):
    html = client.get("/lessons/leader-election/").content.decode()
    offered = set(load_content("leader-election").scenario["commands"])
    broker_form = html.split('id="broker-form"')[1].split("</form>")[0]
    link_form = html.split('id="link-form"')[1].split("</form>")[0]
    want_broker = [n for n, c in faults().items() if n in offered and fault_panel(c) == "broker"]
    assert re.findall(r'data-cmd="([a-z_]+)"', broker_form) == want_broker
    assert re.findall(r'data-cmd="([a-z_]+)"', link_form) == \
        [n for n, c in faults().items() if n in offered and fault_panel(c) == "link"]
    for name in want_broker:
        button = re.search(rf'<button[^>]*data-cmd="{name}"[^>]*>([^<]*)</button>', broker_form)
        fault = COMMANDS[name].fault
        assert button.group(1) == fault.label.en
        assert (f'aria-keyshortcuts="{fault.key}"' in button.group(0)) == bool(fault.key)
        assert (f'data-needs="{fault.needs}"' in button.group(0)) == bool(fault.needs)
        assert (" danger" in button.group(0)) == fault.danger
    # In Chinese the labels are the declaration's own Chinese words.
    zh = client.get("/lessons/leader-election/?lang=zh").content.decode()
    assert ">崩溃</button>" in zh and ">Crash</button>" not in zh
    zh_broker_form = zh.split('id="broker-form"')[1].split("</form>")[0]
    for name in want_broker:
        assert f">{COMMANDS[name].fault.label.zh}</button>" in zh_broker_form, name


def test_a_faults_words_are_its_declarations_in_both_languages():
    """One place for a fault's words: the button's label and the step's sentence, English and
    Chinese, are ``Command.fault``; narration fills the sentence and writes no verb of its own."""
    from engine import narration

    for name, cls in faults().items():
        fault = cls.fault
        assert fault.label.en and fault.label.zh and fault.label.zh != fault.label.en, name
        assert fault.says is not None, f"{name}: a fault says what a step that ran it did"
        cmd = {"cmd": name, **{f: 1 for f in node_fields(cls)}, **({"delay_ms": 50} if name == "slow_follower" else {}),
               **({"b": 2} if "b" in node_fields(cls) else {})}
        en, zh = narration.command_label(cmd, "en"), narration.command_label(cmd, "zh")
        assert en == fault.says.en.format(broker="broker 1", a="broker 1", b="broker 2", arrow="↔", delay_ms=50), name
        assert zh == fault.says.zh.format(broker="broker 1", a="broker 1", b="broker 2", arrow="↔", delay_ms=50), name
    source = (Path(narration.__file__)).read_text()
    for name, cls in faults().items():       # no second copy of a fault's words in narration
        assert cls.fault.says.zh.replace("{broker}", "broker {b}") not in source, name


def _cluster_specs(slug="sandbox"):
    content = load_content(slug)
    return get_kind(content.kind).command_specs(content.scenario)


def test_a_preset_may_put_a_role_only_in_a_node_field(monkeypatch):
    aimed = presets.Preset("slow-by-leader", "Shift+Q", "x", "y",
                           ({"cmd": "slow_follower", "broker": 1, "delay_ms": "$leader"},))
    fine = presets.Preset("slow-leader", "Shift+J", "x", "y",
                          ({"cmd": "slow_follower", "broker": "$leader", "delay_ms": 100},))
    monkeypatch.setattr(presets, "PRESETS", (aimed, fine))
    got = {p["id"]: p for p in presets.presets_for(_cluster_specs())}
    assert not got["slow-by-leader"]["enabled"] and "delay_ms" in got["slow-by-leader"]["reason"]
    assert got["slow-leader"]["enabled"], got["slow-leader"]


def test_every_presets_roles_sit_in_node_fields():
    for preset in presets.PRESETS:
        for cmd in preset.do:
            cls = COMMANDS.get(cmd["cmd"])
            for field, value in cmd.items():
                if value in presets.ROLES:
                    assert cls is not None and field in node_fields(cls), (preset.id, field)


def test_acks_choices_are_the_engines():
    spec = _cluster_specs("isr-and-acks")["produce"]
    acks = next(f for f in spec.fields if f.name == "acks")
    assert acks.choices == tuple(ACKS) and ACKS[acks.default] == parse_command({"cmd": "produce", "topic": "t"}).acks
    for name, value in ACKS.items():
        assert parse_command({"cmd": "produce", "topic": "t", "acks": name}).acks == value
    with pytest.raises(CommandError) as refused:
        validate_command({"produce": spec}, {"cmd": "produce", "acks": "2"})
    assert refused.value.field == "acks"
    html = Client().get("/lessons/isr-and-acks/").content.decode()
    select = html.split('name="acks"')[1].split("</select>")[0]
    assert re.findall(r'<option value="([^"]+)"', select) == list(ACKS)


def test_set_config_is_the_engines_command_not_a_dialect():
    specs = _cluster_specs("isr-and-acks")
    spec = specs["set_config"]
    assert spec.extra["engine"] is COMMANDS["set_config"]
    _spec, values = validate_command(specs, {"cmd": "set_config", "changes": {"min.insync.replicas": "2"}})
    assert values == {"scope": "cluster", "changes": {"min.insync.replicas": 2}, "target": None}   # a form's text
    with pytest.raises(CommandError) as old:
        validate_command(specs, {"cmd": "set_config", "name": "min.insync.replicas", "value": "2"})
    assert "Unknown field" in old.value.message
    with pytest.raises(CommandError) as other:
        validate_command(specs, {"cmd": "set_config", "changes": {"log.retention.ms": "1"}})
    assert other.value.field == "changes"


def test_a_command_in_the_type_envelope_gets_one_clear_line():
    with pytest.raises(CommandError) as refused:
        validate_command(_cluster_specs(), {"type": "step"})
    assert refused.value.code == "unknown_type" and '"cmd"' in refused.value.message
    assert "\n" not in refused.value.message


async def _reply(comm, message):
    await comm.send_json_to(message)
    frames = []
    while True:
        msg = await comm.receive_json_from(timeout=20)
        if msg["type"] == "frame":
            frames.append(msg)
        else:
            break
    while not await comm.receive_nothing(timeout=0.2):
        frames.append(await comm.receive_json_from())
    return msg, frames


@pytest.mark.asyncio
async def test_over_the_socket_type_is_refused_and_set_config_changes_the_engine(runtime, runtime_settings):
    runtime_settings.update(COMMAND_BURST=1000, COMMANDS_PER_SECOND=1000.0)
    cookie = Client().get("/lessons/isr-and-acks/").cookies[django_settings.SESSION_COOKIE_NAME].value
    comm = TrackedCommunicator(application, "/ws/lessons/isr-and-acks/",
                               headers=[(b"origin", ORIGIN),
                                        (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode())])
    assert (await comm.connect())[0]
    await comm.receive_json_from(timeout=10)
    reply, _ = await _reply(comm, {"type": "step"})
    assert reply["type"] == "error" and 'named with "cmd"' in reply["message"]
    reply, _ = await _reply(comm, {"cmd": "step"})
    assert reply["type"] == "ack"
    reply, frames = await _reply(comm, {"cmd": "set_config", "scope": "cluster",
                                        "changes": {"min.insync.replicas": "2"}})
    assert reply["type"] == "ack", reply
    assert any("config_changed" in str(f) for f in frames)
    reply, _ = await _reply(comm, {"cmd": "set_config", "changes": {"min.insync.replicas": "0"}})
    assert reply["type"] == "error" and reply["code"] == "engine"      # the engine's bounds, not a second copy
    await comm.disconnect()
    await asyncio.sleep(0)
