"""Issue 18, items 2-4: every lesson's sandbox runs on the engine's Run, a sandbox kind is
its world plus views, and nothing is found by string where a registry or an import does
the job. Each test fails if that structure comes undone."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from engine.cluster.run import Run
from kafkaviz.lessons.catalogue import LESSONS
from kafkaviz.live.kinds import run_spec
from kafkaviz.live import runtime as runtime_module
from kafkaviz.live.kinds import SANDBOX_KINDS, Limits, SandboxKind, get_kind
from kafkaviz.live.runtime import COMMON_COMMANDS
from kafkaviz.live.validation import validate_command

REPO = Path(__file__).resolve().parents[2]
STORAGE = sorted(name for name, cls in SANDBOX_KINDS.items() if cls.world is not None)


def test_the_six_storage_kinds_name_a_world_and_run_no_command_themselves():
    assert STORAGE == ["compaction", "inside-segment", "page-cache", "retention", "segments", "topic"]
    for name in STORAGE:
        cls = SANDBOX_KINDS[name]
        commands = {c.cmd for c in cls.world.commands()}
        own_methods = {n for klass in cls.__mro__ if klass not in (SandboxKind, object) for n in vars(klass)}
        assert not commands & own_methods, (name, commands & own_methods)
        specs = cls.command_specs({})
        assert {n for n, s in specs.items() if "engine" in s.extra} == commands


def test_no_kind_replays_from_the_start():
    for helper in ("_run_step", "open"):
        assert not hasattr(SandboxKind, helper), helper


@pytest.mark.parametrize("slug", ["segments", "flush-and-page-cache", "idempotence-and-transactions"])
def test_back_restores_a_checkpoint_of_the_run(tmp_path, slug):
    lesson = next(x for x in LESSONS if x.slug == slug).content()
    kind = get_kind(lesson.kind)(tmp_path / "box", seed=1, limits=Limits(1000, 10**8), lesson=lesson)
    try:
        assert isinstance(kind.run, Run)
        for _ in range(4):
            kind.step()
        after_three = None
        kind.seek(3)
        after_three = kind.run.state_digest()
        applied = []
        original = kind.run.rules.apply
        kind.run.rules.apply = lambda world, cmd: applied.append(cmd) or original(world, cmd)
        kind.step()
        applied.clear()
        kind.back()
        assert applied == [] and kind.position == 3      # a checkpoint, not a replay from step 0
        assert kind.run.state_digest() == after_three
    finally:
        kind.close()


def test_a_storage_lessons_export_imports_to_the_same_run(tmp_path):
    lesson = next(x for x in LESSONS if x.slug == "retention").content()
    make = lambda d: get_kind("retention")(tmp_path / d, seed=5, limits=Limits(1000, 10**8), lesson=lesson)  # noqa: E731
    a, b = make("a"), make("b")
    try:
        a.step()
        spec, values = validate_command(a.commands, {"cmd": "produce", "count": "3", "value_size": "50"})
        run_spec(a, spec, values)
        exported = a.export_run()
        assert [e["scripted"] for e in exported["log"]] == [True, False] and exported["step"] == 2
        b.import_run(exported)
        assert b.run.state_digest() == a.run.state_digest() and b.export_run() == exported
    finally:
        a.close()
        b.close()


def test_the_runtimes_own_commands_carry_their_runner():
    assert not hasattr(runtime_module, "RUN_COMMANDS")
    for name, spec in COMMON_COMMANDS.items():
        assert callable(spec.extra.get("runtime")), name
    assert "RUN_COMMANDS[" not in inspect.getsource(runtime_module)


def test_kinds_are_imported_not_looked_up_by_module_name():
    apps = (REPO / "kafkaviz/live/apps.py").read_text()
    assert "importlib" not in apps and "import_module" not in apps


def test_live_js_dispatches_every_socket_message_through_one_registry():
    live = (REPO / "static/js/live.js").read_text()
    body = live[live.index("function dispatch(msg)"):]
    body = body[:body.index("\n  }\n")]
    assert "msg.type ===" not in body and "KV.handlers" in body
    for path in (REPO / "static/js").glob("*.js"):
        assert "KV.onMessage" not in path.read_text(), path.name
    assert re.search(r'KV\.on\("frame"', live) and re.search(r'KV\.on\("error"', live)


def test_every_sentence_a_storage_world_says_has_chinese():
    import ast

    from django.utils import translation
    from django.utils.translation import gettext

    tree = ast.parse((REPO / "engine/storage_world.py").read_text())
    templates = {n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", None) == "_say" and isinstance(n.args[0], ast.Constant)}
    templates |= {n.elts[0].value for n in ast.walk(tree) if isinstance(n, ast.List) and len(n.elts) == 2
                  and isinstance(n.elts[0], ast.Constant) and "%(" in str(n.elts[0].value)}
    assert len(templates) > 25
    with translation.override("zh-hans"):
        missing = [t for t in templates if gettext(t) == t]
    assert not missing


def test_the_lessons_app_never_imports_the_live_app():
    """live imports lessons (content, catalogue, checks); the other way would be a circle."""
    import ast

    for path in (REPO / "kafkaviz/lessons").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            if isinstance(node, ast.ImportFrom) and node.level == 2:
                names = [f"kafkaviz.{node.module or ''}"]
            assert not any(n.startswith("kafkaviz.live") for n in names), (path.name, names)


def test_the_runtime_checkpoints_each_step_after_its_frame(tmp_path):
    """A step's checkpoint is taken once its frame has been published, so Back to it
    restores and replays nothing, and the click's frame never waits for the checkpoint."""
    import asyncio

    from django.conf import settings as django_settings

    from kafkaviz.live.runtime import Runtime, new_sandbox_id

    async def body():
        sent = []

        async def publish(group, message):
            sent.append(sb.run.position in sb.run.snapshot_steps())     # checkpointed yet, when the frame left?
        rt = Runtime(tmp_path / "data", settings={**django_settings.KAFKAVIZ_RUNTIME, "REAP_EVERY_SECONDS": 0},
                     publish=publish)
        try:
            sid = new_sandbox_id()
            await rt.attach(sid, "segments")
            sb = rt.sandboxes[sid].engine
            assert sb.defer_checkpoints
            for _ in range(3):
                await rt.command(sid, {"cmd": "step"})
            assert sent and not sent[0]      # the first step's frame leaves at once, before its checkpoint
            assert {sb.ends[0], sb.ends[1], sb.ends[2]} <= set(sb.run.snapshot_steps())
        finally:
            rt.close_all()

    asyncio.run(body())
