""""Connect your own client" on the sandbox page (the browser tests' server runs with
DJANGO_DEBUG=1, as `make run` does, so the listener is on): the button starts it, the page
shows the bootstrap address and the snippets with it filled in, kcat's requests reach the
timeline, and Back is disabled while a connection is attached."""
from __future__ import annotations

import shutil
import socket
import subprocess

import pytest
from playwright.sync_api import Page, expect

from .test_frame_protocol import wait_for

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is a system package")]


def test_connect_your_own_client_from_the_sandbox_page(page: Page, live_server_url):
    page.goto(f"{live_server_url}/sandbox/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    page.click("#step-button")              # so that Back has somewhere to go
    wait_for(page, "KV.lastFrame.state.run.step === 1")
    page.click("#client-port-button")
    addr = page.locator("#client-port-bootstrap").text_content(timeout=15000) or ""
    assert addr.startswith("127.0.0.1:")
    expect(page.locator("#client-port-snippets")).to_be_visible()
    expect(page.locator("#client-port-snippets code").first).to_contain_text(f"kcat -b {addr}")

    done = subprocess.run(["kcat", "-b", addr, "-L"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert " 3 brokers:" in done.stdout
    expect(page.locator("#timeline, #step-timeline").first).to_contain_text("sent Metadata", timeout=15000)

    host, port = addr.split(",")[0].split(":")
    sock = socket.create_connection((host, int(port)))
    try:
        expect(page.locator("#client-port-connections")).to_contain_text("1 connection", timeout=15000)
        expect(page.locator("#back-button")).to_have_attribute("aria-disabled", "true")
    finally:
        sock.close()
    expect(page.locator("#client-port-connections")).to_contain_text("No client is connected", timeout=15000)
    expect(page.locator("#back-button")).not_to_have_attribute("aria-disabled", "true")
