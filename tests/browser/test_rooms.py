"""A class in two browsers: the instructor logs in, opens a room from the sandbox, a
student joins on a phone-sized page, the instructor kills the leader with the preset's
shortcut and the student's diagram shows it; control granted → the student steps the
room; revoked → refused. Screenshots of the presenter view (1366 px) and the student's
page (390 px) are saved in the test's temp dir to look at."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from playwright.sync_api import Browser, expect

from .conftest import REPO, daphne_server
from .test_frame_protocol import wait_for

pytestmark = pytest.mark.browser

PASSWORD = "browser-test-password"


@pytest.fixture(scope="module")
def room_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kafkaviz-rooms")
    env = {"KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS": "0", "KAFKAVIZ_MAX_CONNECTIONS_PER_ADDRESS": "0"}
    with daphne_server(tmp, env) as url:
        run_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "kafkaviz.settings", "DJANGO_DEBUG": "1",
                   "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}", "ROOM_PW": PASSWORD}
        subprocess.run([sys.executable, "manage.py", "createinstructor", "teacher", "--password-env", "ROOM_PW"],
                       cwd=REPO, env=run_env, check=True, capture_output=True)
        yield url


def log_in(page, url: str) -> None:
    """The instructor "teacher" (created by ``room_server``) logs in."""
    page.goto(url + "/accounts/login/")
    page.fill("#id_username", "teacher")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def test_a_class_watches_the_instructor_break_the_cluster(browser: Browser, room_server, tmp_path):
    teacher_ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    student_ctx = browser.new_context(viewport={"width": 390, "height": 844})
    teacher, student = teacher_ctx.new_page(), student_ctx.new_page()
    try:
        # The instructor logs in and opens a room from their sandbox, two steps in.
        log_in(teacher, room_server)
        teacher.goto(room_server + "/lessons/sandbox/")
        expect(teacher.locator("#conn-status")).to_have_attribute("data-state", "open")
        teacher.click("#step-button")
        teacher.click("#step-button")
        expect(teacher.locator("#step-counter")).to_contain_text("Step 2 of")
        teacher.click("#open-room-button")
        teacher.wait_for_url("**/rooms/*/present")
        expect(teacher.locator("#conn-status")).to_have_attribute("data-state", "open")
        code = teacher.locator(".join-code").inner_text().strip()
        assert len(code) == 8
        wait_for(teacher, "KV.lastFrame && KV.lastFrame.state.run.step === 2")

        # A student joins by the link, under a name, without an account.
        student.goto(f"{room_server}/r/{code}")
        student.fill("#id_name", "Ada")
        student.click("button[type=submit]")
        expect(student.locator("#conn-status")).to_have_attribute("data-state", "open")
        wait_for(student, "KV.lastFrame && KV.lastFrame.state.run.step === 2")
        expect(student.locator("#room-control")).to_contain_text("Watching")
        expect(teacher.locator("#roster")).to_contain_text("Ada")
        # A watcher's page has no Step, Back, Reset or Play: they would only answer "forbidden".
        for control in ("#step-button", "#back-button", "#reset-button", "#play-button"):
            expect(student.locator(control)).to_be_hidden()

        # The instructor steps until the partition has a leader, then kills it: Shift+K.
        for _ in range(6):
            if teacher.evaluate("() => { const p = KV.lastFrame.state.partition; return !!p && p.leader >= 0; }"):
                break
            teacher.click("#step-button")
            teacher.wait_for_timeout(300)
        leader = teacher.evaluate("() => KV.lastFrame.state.partition.leader")
        teacher.locator("body").click(position={"x": 5, "y": 5})
        teacher.keyboard.press("Shift+K")
        wait_for(student, f"KV.lastFrame.state.brokers[{leader}].alive === false")
        expect(student.locator(f"#cl-broker-{leader} .cl-status")).to_contain_text("DOWN")

        # Grant: the student moves the room's clock; everybody sees it.
        clock = teacher.evaluate("() => KV.lastFrame.state.clock_ms")
        teacher.locator(".roster-member", has_text="Ada").locator(".roster-toggle").click()
        expect(student.locator("#room-banner")).to_have_attribute("data-control", "granted")
        expect(student.locator("#step-button")).to_be_visible()
        student.click("#advance-button")
        wait_for(teacher, f"KV.lastFrame.state.clock_ms > {clock}")
        clock = teacher.evaluate("() => KV.lastFrame.state.clock_ms")

        # Revoke: the next command is refused and nothing moves.
        teacher.locator(".roster-member", has_text="Ada").locator(".roster-toggle").click()
        expect(student.locator("#room-banner")).to_have_attribute("data-control", "watching")
        expect(student.locator("#step-button")).to_be_hidden()
        student.click("#advance-button")
        expect(student.locator("[role=alert]", has_text="Only the instructor").first).to_be_visible()
        teacher.wait_for_timeout(300)
        assert teacher.evaluate("() => KV.lastFrame.state.clock_ms") == clock

        for page in (teacher, student):
            page.evaluate("() => window.scrollTo(0, 0)")
        teacher.screenshot(path=str(tmp_path / "presenter-1366.png"), full_page=False)
        student.screenshot(path=str(tmp_path / "student-390.png"), full_page=False)
        out = os.environ.get("KAFKAVIZ_SCREENSHOTS")
        if out:
            teacher.screenshot(path=os.path.join(out, "presenter-1366.png"))
            student.screenshot(path=os.path.join(out, "student-390.png"))

        # Fork: one click, and the student is in a sandbox of their own at the room's step.
        room_step = teacher.evaluate("() => KV.lastFrame.state.run.step")
        student.click("#room-fork")
        student.wait_for_url("**/lessons/sandbox/?run=*")
        expect(student.locator("#conn-status")).to_have_attribute("data-state", "open")
        wait_for(student, f"KV.lastFrame && KV.lastFrame.state.run.step === {room_step} && "
                          f"KV.lastFrame.state.brokers[{leader}].alive === false")
        student.click("#back-button")
        wait_for(student, f"KV.lastFrame.state.run.step === {room_step - 1}")
        teacher.wait_for_timeout(300)
        assert teacher.evaluate("() => KV.lastFrame.state.run.step") == room_step   # the room did not move

        # The instructor removes Ada from "Who is here": she cannot come back with this browser.
        teacher.once("dialog", lambda dialog: dialog.accept())
        teacher.locator(".roster-member", has_text="Ada").locator(".roster-remove").click()
        expect(teacher.locator("#roster")).not_to_contain_text("Ada")
        student.goto(f"{room_server}/r/{code}")
        expect(student.locator("#join-notice")).to_contain_text("removed you from this room")
    finally:
        teacher_ctx.close()
        student_ctx.close()


def test_a_watchers_shortcuts_send_nothing_until_control_is_given(browser: Browser, room_server):
    """A watcher's page hides Step, Back, Reset and Play; its keyboard shortcuts for them
    (and for the diagram's command buttons) must do nothing either, rather than send a
    command the server answers with "forbidden", and the "?" list must not offer them."""
    teacher_ctx, student_ctx = browser.new_context(), browser.new_context()
    teacher, student = teacher_ctx.new_page(), student_ctx.new_page()
    try:
        log_in(teacher, room_server)
        teacher.goto(room_server + "/lessons/sandbox/")
        expect(teacher.locator("#conn-status")).to_have_attribute("data-state", "open")
        teacher.click("#open-room-button")
        teacher.wait_for_url("**/rooms/*/present")
        code = teacher.locator(".join-code").inner_text().strip()
        wait_for(teacher, "KV.lastFrame && KV.lastFrame.state.run")
        step = teacher.evaluate("() => KV.lastFrame.state.run.step")

        student.goto(f"{room_server}/r/{code}")
        student.fill("#id_name", "Ada")
        student.click("button[type=submit]")
        expect(student.locator("#conn-status")).to_have_attribute("data-state", "open")
        expect(student.locator("#room-banner")).to_have_attribute("data-control", "watching")
        wait_for(student, "KV.lastFrame && KV.lastFrame.state.run")
        # Every command the page sends: forms through htmx's ws extension, the rest through KV.socket.
        student.evaluate("""() => { window.sentTypes = []; const s = KV.socket, send = s.send.bind(s);
            s.send = function (m) { const o = JSON.parse(m); window.sentTypes.push(o.cmd || o.type); send(m); };
            document.body.addEventListener("htmx:wsBeforeSend",
                function (e) { const o = JSON.parse(e.detail.message); window.sentTypes.push(o.cmd || o.type); }); }""")
        student.locator("body").click(position={"x": 5, "y": 5})
        for key in ("ArrowRight", "ArrowLeft", "Space", "Home", "End", "Shift+R", "t", "c"):
            student.keyboard.press(key)
        student.wait_for_timeout(500)
        assert student.evaluate("() => window.sentTypes") == []
        expect(student.locator("[role=alert]", has_text="Only the instructor")).to_have_count(0)
        assert teacher.evaluate("() => KV.lastFrame.state.run.step") == step

        # "?" still opens the list; it says why the command keys are missing.
        student.keyboard.press("?")
        expect(student.locator("#keys-dialog")).to_be_visible()
        expect(student.locator("#keys-dialog .keys-watching")).to_be_visible()
        expect(student.locator("#keys-dialog", has_text="Run the next step")).to_have_count(1)     # in the DOM ...
        expect(student.locator("#keys-dialog dd", has_text="Run the next step")).to_be_hidden()  # ... not shown
        expect(student.locator("#keys-dialog dd", has_text="Show or hide this list")).to_be_visible()
        student.keyboard.press("Escape")

        # Control given: the same key steps the room.
        teacher.locator(".roster-member", has_text="Ada").locator(".roster-toggle").click()
        expect(student.locator("#room-banner")).to_have_attribute("data-control", "granted")
        student.locator("body").click(position={"x": 5, "y": 5})
        student.keyboard.press("ArrowRight")
        wait_for(teacher, f"KV.lastFrame.state.run.step === {step + 1}")
        assert student.evaluate("() => window.sentTypes") == ["step"]
    finally:
        teacher_ctx.close()
        student_ctx.close()
