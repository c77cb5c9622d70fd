"""One command vocabulary (issue 18): lessons, classroom presets and forms send engine
commands, in one envelope (``cmd``) and in milliseconds, and docs/commands.md lists exactly
what they send.

"Sent" means: a lesson file's steps and setup, the commands a lesson offers its learner
(``scenario.commands``), the commands of the engine scenarios a lesson plays, a classroom
preset's, and a template's command form (``<input name="cmd" value=...>``) or action button
(``data-cmd``). "Documented" is read off docs/commands.md: the ``### `name` `` headings and
the first column of a "command" table, split into its cluster part, its storage part and
its page controls.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from engine.cluster.commands import COMMANDS
from engine.cluster.scenarios import get_scenario
from engine.storage_commands import STORAGE_COMMANDS
from kafkaviz.classroom.presets import PRESETS
from kafkaviz.lessons.catalogue import LESSONS, SANDBOX
from kafkaviz.live.kinds import SANDBOX_KINDS
from kafkaviz.live.runtime import COMMON_COMMANDS

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "kafkaviz" / "lessons" / "content"
DOCS = ROOT / "docs" / "commands.md"
TEMPLATES = sorted((ROOT / "templates").rglob("*.html"))
SCRIPTS = sorted((ROOT / "static" / "js").glob("*.js"))
LESSON_FILES = sorted(CONTENT.glob("*.toml"))


# ---- what is sent ------------------------------------------------------------------------

def _lesson_commands(data: dict) -> list[dict]:
    """Every command table of a lesson file: its steps' and its setup's."""
    scenario = data.get("scenario") or {}
    steps = data.get("steps") or ()
    steps = steps.values() if isinstance(steps, dict) else steps     # a translation's steps, keyed by id
    return [c for s in steps for c in s.get("do") or ()] + list(scenario.get("setup") or ())


def _sent_by_lessons() -> dict[str, set[str]]:
    """Vocabulary ("storage", "cluster", "page") -> command names the lessons send or offer."""
    out: dict[str, set[str]] = {"storage": set(), "cluster": set(), "page": set()}
    for lesson in [*LESSONS, SANDBOX]:
        content = lesson.content()
        if content is None or content.kind is None:
            continue
        # lesson 16's steps replay a recorded client session: a control of its own, not an engine command
        world = ("cluster" if content.kind in ("replication", "guided-cluster") else
                 "page" if content.kind == "client-session" else "storage")
        data = tomllib.loads((CONTENT / f"{lesson.slug}.en.toml").read_text())
        out[world] |= {c["cmd"] for c in _lesson_commands(data)}
        out["cluster"] |= set(content.scenario.get("commands") or ())
        for name in content.scenario.get("choices") or () if content.kind == "replication" else ():
            out["cluster"] |= {c["cmd"] for c in get_scenario(name).commands()}
    return out


def _sent_by_forms() -> set[str]:
    names: set[str] = set()
    for path in TEMPLATES:
        text = path.read_text()
        names |= set(re.findall(r'name="cmd" value="([a-z_]+)"', text))
        names |= set(re.findall(r'data-cmd="([a-z_]+)"', text))
    return names


# ---- what is documented --------------------------------------------------------------------

def _documented() -> dict[str, set[str]]:
    text = DOCS.read_text()
    cluster, rest = text.split("\n# Storage commands\n")
    storage, page = rest.split("\n# Page controls\n")

    def names(part: str) -> set[str]:
        found = set(re.findall(r"^### `([a-z_]+)`$", part, flags=re.M))
        for table in re.findall(r"^\| (?:command|page control) \|.*?\n\|[-|]+\|\n((?:\|.*\n?)*)", part, flags=re.M):
            found |= set(re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.M))
        return found

    return {"cluster": names(cluster), "storage": names(storage), "page": names("\n" + page)}


# ---- one envelope, one unit ----------------------------------------------------------------

@pytest.mark.parametrize("path", LESSON_FILES, ids=lambda p: p.name)
def test_a_lesson_file_names_its_commands_with_cmd_and_never_advances_in_seconds(path):
    text = path.read_text()
    assert not re.search(r"\btype\s*=", text), f"{path.name}: a command is named with 'cmd =', not 'type ='"
    assert "seconds" not in "".join(re.findall(r"^[a-z_]+ *=", text, flags=re.M)), \
        f"{path.name}: a scenario key in seconds (durations are in ms)"
    for c in _lesson_commands(tomllib.loads(text)):
        assert "type" not in c and "seconds" not in c, f"{path.name}: {c}"


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.id)
def test_a_preset_names_its_commands_with_cmd_and_never_advances_in_seconds(preset):
    for c in preset.do:
        assert "type" not in c and isinstance(c.get("cmd"), str) and "seconds" not in c, (preset.id, c)


def test_no_form_sends_type_or_seconds():
    for path in TEMPLATES:
        text = path.read_text()
        assert 'name="type"' not in text, f"{path.name}: a command form names its command with name=\"cmd\""
        assert "data-type=" not in text, f"{path.name}: a button names the command it sends with data-cmd"
        assert 'name="seconds"' not in text, f"{path.name}: the clock moves in ms"
    # A script names a command with cmd too; type names only the socket's own messages.
    socket_messages = {"sync", "predict", "grant", "revoke", "remove"}
    for path in SCRIPTS:
        text = path.read_text()
        assert 'input[name="type"]' not in text, path.name
        sent = set(re.findall(r'send\((?:JSON\.stringify\()?\{\s*type:\s*"([a-z_]+)"', text))
        assert sent <= socket_messages, f"{path.name} sends commands under type: {sorted(sent - socket_messages)}"


@pytest.mark.parametrize("kind", sorted(SANDBOX_KINDS))
def test_no_sandbox_command_takes_seconds(kind):
    for lesson in [*LESSONS, SANDBOX]:
        content = lesson.content()
        if content is not None and content.kind == kind:
            specs = SANDBOX_KINDS[kind].command_specs(content.scenario)
            assert not [n for n, s in specs.items() if any(f.name == "seconds" for f in s.fields)], kind


# ---- docs/commands.md agrees with the lessons and with the engine ------------------------------

def test_every_command_a_lesson_sends_or_offers_is_documented_in_its_vocabulary():
    documented = _documented()
    for world, names in _sent_by_lessons().items():
        assert names <= documented[world], f"{world}: not in docs/commands.md: {sorted(names - documented[world])}"


def test_every_command_a_preset_or_a_form_sends_is_documented():
    documented = set().union(*_documented().values())
    sent = _sent_by_forms() | {c["cmd"] for p in PRESETS for c in p.do}
    assert sent <= documented, sorted(sent - documented)


def test_every_documented_command_is_the_engines():
    documented = _documented()
    assert documented["storage"] == set(STORAGE_COMMANDS)
    assert documented["cluster"] == set(COMMANDS)
    page = set(COMMON_COMMANDS) | {"step", "back", "seek"}
    for kind in SANDBOX_KINDS.values():
        page |= {name for name, entry in kind._handlers.items() if len(entry) == 3}   # a kind's own @command
    assert documented["page"] <= page, sorted(documented["page"] - page)
    assert documented["page"].isdisjoint(STORAGE_COMMANDS)


def test_every_storage_command_field_is_documented():
    import dataclasses

    storage = DOCS.read_text().split("\n# Storage commands\n")[1].split("\n# Page controls\n")[0]
    for name, cls in STORAGE_COMMANDS.items():
        section = storage.split(f"### `{name}`\n")[1].split("\n### ")[0]
        for f in dataclasses.fields(cls):
            assert f"| `{f.name}` |" in section, (name, f.name)


def test_a_command_forms_number_limits_come_from_the_engines_field_metadata():
    """``min``/``max`` of a number input in a command form read ``commands.<cmd>.<field>``
    (the spec derived from the engine's metadata and the host's caps), never a number."""
    for path in TEMPLATES:
        for form in re.findall(r"<form\b[^>]*\bws-send\b.*?</form>", path.read_text(), flags=re.S):
            for tag in re.findall(r'<input\b[^>]*type="number"[^>]*>', form, flags=re.S):
                assert not re.search(r'\b(?:min|max)="-?\d', tag), f"{path.name}: {tag}"
