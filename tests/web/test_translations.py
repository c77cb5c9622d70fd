"""The Chinese UI strings: every entry of the .po file is translated, and the committed
.mo (what Django reads) says the same as the .po (so nobody forgot `make messages`)."""
from __future__ import annotations

import ast
import gettext
from pathlib import Path

import pytest

PO = Path(__file__).resolve().parents[2] / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"


def po_entries(path: Path) -> dict[str, str]:
    """msgid → msgstr; an entry with a msgctxt is keyed "context\x04msgid", as gettext stores it."""
    entries: dict[str, str] = {}
    key = None
    context = None
    current: list[str] = []
    target = None
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("#~"):
            continue
        if line.startswith("msgctxt "):
            if key is not None and target is not None:
                entries[key] = "".join(target)
            key, target, context = None, None, ast.literal_eval(line[8:])
        elif line.startswith("msgid "):
            if key is not None and target is not None:
                entries[key] = "".join(target)
            current, target = [ast.literal_eval(line[6:])], None
            key = None
        elif line.startswith("msgstr "):
            key = "".join(current) if context is None else context + "\x04" + "".join(current)
            context = None
            target = [ast.literal_eval(line[7:])]
        elif line.startswith('"'):
            (target if target is not None else current).append(ast.literal_eval(line))
    if key is not None and target is not None:
        entries[key] = "".join(target)
    entries.pop("", None)   # the header
    return entries


def test_every_ui_string_has_a_chinese_translation():
    entries = po_entries(PO)
    assert len(entries) > 100
    assert not [k for k, v in entries.items() if not v.strip()]
    assert "#, fuzzy" not in PO.read_text(encoding="utf-8")


def test_the_compiled_catalogue_matches_the_po_file():
    with PO.with_suffix(".mo").open("rb") as fh:
        mo = gettext.GNUTranslations(fh)
    for msgid, msgstr in po_entries(PO).items():
        assert mo.gettext(msgid) == msgstr, msgid


def with_runtime(tmp_path, body) -> None:
    """Run ``await body(runtime)`` on a fresh runtime (no reaper, frames dropped)."""
    import asyncio

    from django.conf import settings as django_settings

    from kafkaviz.live.runtime import Runtime

    async def run():
        async def publish(group, message):
            pass
        rt = Runtime(tmp_path / "data", settings={**django_settings.KAFKAVIZ_RUNTIME, "REAP_EVERY_SECONDS": 0},
                     publish=publish)
        try:
            await body(rt)
        finally:
            rt.close_all()

    asyncio.run(run())


def test_a_chinese_page_gets_refusals_and_replies_in_chinese(tmp_path):
    from kafkaviz.live.runtime import new_sandbox_id
    from kafkaviz.live.validation import CommandError

    async def body(rt):
        zh, en = new_sandbox_id(), new_sandbox_id()
        await rt.attach(zh, "segments", "zh")
        await rt.attach(en, "segments", "en")
        with pytest.raises(CommandError) as err:
            await rt.command(zh, {"cmd": "produce", "count": ""})
        assert err.value.message == "请填写消息数。"
        with pytest.raises(CommandError) as err:
            await rt.command(en, {"cmd": "produce", "count": ""})
        assert err.value.message == "Number of messages is required."
        reply = await rt.command(zh, {"cmd": "produce", "count": "2"})
        assert reply["text"] == "已向分区 0 发送 2 条消息：偏移量 0–1。"

    with_runtime(tmp_path, body)


@pytest.mark.django_db(transaction=True)
def test_a_chinese_replication_lesson_gets_its_replies_in_chinese(tmp_path):
    from kafkaviz.live.runtime import new_sandbox_id
    from kafkaviz.live.validation import CommandError

    async def body(rt):
        sid = new_sandbox_id()
        await rt.attach(sid, "leader-epoch", "zh")
        reply = await rt.command(sid, {"cmd": "load", "scenario": "kip101-divergence", "truncation": "hw"})
        assert reply["text"] == "已载入 kip101-divergence（截断规则 hw）：请按“下一步”。"
        reply = await rt.command(sid, {"cmd": "step"})
        assert reply["text"].startswith("第 1 步完成（共 ")
        reply = await rt.command(sid, {"cmd": "back"})
        assert reply["text"].startswith("已回到第 0 步（共 ")
        assert (await rt.command(sid, {"cmd": "export"}))["text"] == "这是这次运行的 JSON。"
        with pytest.raises(CommandError) as err:
            await rt.command(sid, {"cmd": "open_shared", "id": "AAAAAAAA"})
        assert err.value.message == "找不到这个分享链接（可能输错了，或它属于另一课）。"

    with_runtime(tmp_path, body)


def test_a_sandbox_opened_again_in_chinese_speaks_chinese(tmp_path):
    from kafkaviz.live.runtime import new_sandbox_id

    async def body(rt):
        sid = new_sandbox_id()
        await rt.attach(sid, "segments", "en")
        await rt.command(sid, {"cmd": "step"})
        snap = await rt.attach(sid, "segments", "zh")    # the language link reloads the page
        assert snap["state"]["run"]["steps"][0]["say"].startswith("向分区 0 发送四条")
        assert any("分区 0" in e["text"] for e in snap["events"])
        reply = await rt.command(sid, {"cmd": "produce", "count": "2"})
        assert reply["text"].startswith("已向分区 0 发送 2 条消息")

    with_runtime(tmp_path, body)
