"""A class in a room, in two real browsers: the instructor signs in, opens a room from a
lesson, a student joins by the code on the projector, the instructor kills the leader with
a preset key and the student's diagram shows it; the student's own controls are refused
until the instructor hands over control, and refused again once it is taken back."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from playwright.sync_api import Page, expect

from .conftest import REPO, daphne_server
from .test_frame_protocol import wait_for

PASSWORD = "a-long-classroom-password"


@pytest.fixture(scope="module")
def room_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rooms-server")
    extra = {"KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS": "0", "KAFKAVIZ_MAX_CONNECTIONS_PER_ADDRESS": "0"}
    with daphne_server(tmp, extra) as url:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "kafkaviz.settings", "DJANGO_DEBUG": "1",
               "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}", "KV_PW": PASSWORD}
        subprocess.run([sys.executable, "manage.py", "createinstructor", "teacher", "--password-env", "KV_PW"],
                       cwd=REPO, env=env, check=True, capture_output=True)
        yield url


def connected(page: Page) -> None:
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    wait_for(page, "window.KV && KV.lastFrame")


def test_an_instructor_drives_a_room_a_student_watches_and_control_is_handed_over(room_server, browser, tmp_path):
    teacher_ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    student_ctx = browser.new_context(viewport={"width": 390, "height": 844})
    teacher, student = teacher_ctx.new_page(), student_ctx.new_page()
    try:
        teacher.goto(room_server + "/accounts/login/")
        teacher.get_by_label("Username").fill("teacher")
        teacher.get_by_label("Password").fill(PASSWORD)
        teacher.get_by_role("button", name="Sign in").click()
        expect(teacher.get_by_role("heading", name="Your rooms")).to_be_visible()

        teacher.goto(room_server + "/lessons/leader-epoch/")
        connected(teacher)
        teacher.get_by_role("button", name="Teach this in a room").click()
        expect(teacher.locator(".join-code code")).to_be_visible()
        code = teacher.locator(".join-code code").inner_text().replace("-", "")
        connected(teacher)
        expect(teacher.locator("#room-role")).to_have_text("You are driving. Everyone in the room sees what you do.")

        student.goto(room_server + f"/r/{code}")
        expect(student.get_by_label("Room code")).to_have_value(code)
        student.get_by_label("Your name").fill("Ada")
        student.get_by_role("button", name="Join").click()
        connected(student)
        expect(student.locator("#room-role")).to_have_text("You are watching; the instructor drives.")
        expect(teacher.locator("#roster .roster-member")).to_contain_text("Ada")
        expect(teacher.locator("#roster .roster-member")).to_contain_text("online")

        for _ in range(3):
            teacher.keyboard.press("ArrowRight")
        wait_for(teacher, "KV.lastFrame.state.run.step === 3")
        leader = teacher.evaluate("() => KV.lastFrame.state.partition.leader")
        teacher.keyboard.press("Shift+K")        # the "kill the leader" preset
        wait_for(student, f"KV.lastFrame.state.brokers.find(b => b.id === {leader}).alive === false")
        expect(student.locator(".cl-broker.down")).to_contain_text(re.compile("down", re.I))

        student.keyboard.press("ArrowRight")    # a watcher's step is refused, with the reason shown
        expect(student.locator("#general-error")).to_contain_text("Only the instructor")
        step_before = student.evaluate("() => KV.lastFrame.state.run.step")

        teacher.locator("#roster").get_by_role("button", name="Give control").click()
        expect(student.locator("#room-role")).to_contain_text("gave you control")
        student.locator("#advance-button").click()      # "let 1 s pass": a new step for the whole room
        wait_for(student, f"KV.lastFrame.state.run.step === {step_before + 1}")
        wait_for(teacher, f"KV.lastFrame.state.run.step === {step_before + 1}")   # the whole room moved

        student.screenshot(path=str(tmp_path / "room-student-390.png"), full_page=False)
        teacher.screenshot(path=str(tmp_path / "room-presenter-1366.png"), full_page=False)
        if os.environ.get("KAFKAVIZ_SCREENSHOTS"):
            for name in ("room-student-390.png", "room-presenter-1366.png"):
                (tmp_path / name).replace(os.path.join(os.environ["KAFKAVIZ_SCREENSHOTS"], name))

        teacher.locator("#roster").get_by_role("button", name="Take control back").click()
        expect(student.locator("#room-role")).to_have_text("You are watching; the instructor drives.")
        student.locator("#advance-button").click(force=True)   # aria-disabled, still clickable: told why
        expect(student.locator("#general-error")).to_contain_text("Only the instructor")
        assert student.evaluate("() => KV.lastFrame.state.run.step") == step_before + 1
    finally:
        teacher_ctx.close()
        student_ctx.close()
