"""The stage (issue 17): every lesson keeps its step controls, the current step's sentence
and its main picture on the first screen, at 1366×800, 1280×720 and 390×844, after every
step: the whole main picture, down to its last row (and, where the stage marks it, the part
the sentence speaks about beside it: lesson 13's lag row), with the sentence above it, and on
a phone the controls in at most 64 px; the page never scrolls sideways and the console stays
clean. Messages travel on the cluster picture as labelled tokens, without motion when the
reader asks for less of it.

The walk through every lesson at the three sizes (every step measured at 1280×720 and on a
phone, every fourth at 1366×800, see EVERY), then one Back, took 80 s at two sizes on a quiet
2-core machine; with the third it took 4.5 min at a load average of 12-17 on the shared
2-core machine (the whole module 7.5 min there), about 2 min expected when quiet -- under
the ~3 minutes that would send it to `slow`, so it runs by default."""
from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from kafkaviz.lessons.catalogue import LESSONS
from tests.browser.test_frame_protocol import wait_for

pytestmark = pytest.mark.browser

WIDTHS = {"wide": (1366, 800), "short": (1280, 720), "phone": (390, 844)}
# A few px of rounding (sub-pixel layout, a scaled SVG's height) are not a picture cut off.
SLACK = 3
SLUGS = [lesson.slug for lesson in LESSONS] + ["sandbox"]
CLUSTER_LESSONS = ["replication", "isr-and-acks", "leader-epoch", "leader-election", "committing-offsets",
                   "idempotence-and-transactions"]

# Where each hook is on the page (document coordinates), the first viewport's height, and
# how far the page reaches sideways.
GEOMETRY = """() => {
  const box = (id) => { const r = document.getElementById(id).getBoundingClientRect();
    return { top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, left: r.left, right: r.right, height: r.height }; };
  const main = KV.stageMain().getBoundingClientRect();
  return { stage: box("stage"), narration: box("narration"), controls: box("controls"),
           main: { top: main.top + window.scrollY, bottom: main.bottom + window.scrollY, right: main.right, height: main.height,
                   also: KV.stageBottom() },
           vh: window.innerHeight, vw: window.innerWidth, scroll: document.documentElement.scrollWidth };
}"""


def fresh(browser: Browser, size: str, reduced: bool = False):
    w, h = WIDTHS[size]
    ctx = browser.new_context(viewport={"width": w, "height": h}, reduced_motion="reduce" if reduced else "no-preference")
    page = ctx.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return ctx, page, errors


def open_lesson(page: Page, url: str, slug: str, lang: str = "en") -> None:
    page.goto(f"{url}/lessons/{slug}/?lang={lang}")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    wait_for(page, "window.KV && KV.lastFrame && KV.lastFrame.state && KV.lastFrame.state.run")


def check_stage(page: Page, where: str) -> None:
    # As painted: the stage refits its picture to the window when the step's sentence changes
    # size, before the next paint.
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    g = page.evaluate(GEOMETRY)
    for hook in ("stage", "narration", "controls"):
        box = g[hook]
        assert box["height"] > 0 and box["top"] < g["vh"] and box["bottom"] > 0, f"#{hook} not in the first viewport {where}: {box}"
    assert g["scroll"] <= g["vw"], f"horizontal overflow {where}: {g['scroll']} > {g['vw']}"
    # The stage's main picture (its first diagram, and the parts marked to go with it): whole on
    # the first screen at every size, with the whole step's sentence, never wider than the window.
    main = g["main"]
    assert main["height"] > 0 and main["right"] <= g["vw"], f"the main picture overflows sideways {where}: {main}"
    assert main["bottom"] <= g["vh"] + SLACK, f"the main picture runs {main['bottom'] - g['vh']:.0f} px past the first screen {where}"
    assert main["also"] <= g["vh"] + SLACK, f"the part beside the main picture runs {main['also'] - g['vh']:.0f} px past the first screen {where}"
    say = g["narration"]
    assert say["top"] >= 0 and say["bottom"] <= g["vh"] + SLACK, f"the step's sentence is not whole on the first screen {where}: {say}"
    if g["vw"] <= 400:
        assert g["controls"]["height"] <= 64, f"controls take {g['controls']['height']} px {where}"
        # The sticky controls never cover the picture: they end above it.
        assert g["controls"]["bottom"] <= main["top"] + SLACK, f"the controls cover the picture {where}"


def step(page: Page) -> int:
    n = page.evaluate("KV.lastFrame.state.run.step") + 1
    page.click("#step-button")
    wait_for(page, f"KV.lastFrame.state.run.step === {n}")
    return n


# Which steps are measured at each size: every step at the two tightest (1280×720: the least
# height; a phone: the least width), and at 1366×800 -- as wide as 1280 give or take 20 px of
# stage, 80 px taller -- every fourth step and the last, to keep the walk's time in bounds.
EVERY = {"wide": 4, "short": 1, "phone": 1}


def walk(browser: Browser, url: str, slug: str, size: str) -> None:
    ctx, page, errors = fresh(browser, size, reduced=True)
    try:
        open_lesson(page, url, slug)
        check_stage(page, f"{slug} {size} at the start")
        total = page.evaluate("KV.lastFrame.state.run.total")
        for _ in range(total):
            n = step(page)
            if n % EVERY[size] == 0 or n == total:
                check_stage(page, f"{slug} {size} after step {n}")
        if total:
            page.click("#back-button")
            wait_for(page, f"KV.lastFrame.state.run.step === {total - 1}")
            check_stage(page, f"{slug} {size} after Back")
        assert not errors, errors
    finally:
        ctx.close()


@pytest.mark.parametrize("size", sorted(WIDTHS))
@pytest.mark.parametrize("slug", SLUGS)
def test_the_stage_is_on_the_first_screen_after_every_step(browser: Browser, live_server_url, slug, size):
    walk(browser, live_server_url, slug, size)


# A token while it is shown: its kind, label, ends, and whether an animation runs on it.
TOKENS = """() => Array.from(document.querySelectorAll("#cl-flow [data-flow]")).map((n) => ({
  flow: n.dataset.flow, label: n.textContent, from: n.dataset.from, to: n.dataset.to,
  running: n.getAnimations().filter((a) => a.playState === "running").length,
  animations: n.getAnimations().length, transition: getComputedStyle(n).transitionDuration,
  nodes: [n.dataset.from, n.dataset.to].every((id) => document.querySelector('#cl-boxes [data-node="' + id + '"]')) }))"""


def step_until_tokens(page: Page, limit: int = 12) -> list[dict]:
    for _ in range(limit):
        step(page)
        for _ in range(20):
            tokens = page.evaluate(TOKENS)
            if tokens:
                return tokens
            page.wait_for_timeout(25)
    raise AssertionError("no step sent a message")


@pytest.mark.parametrize("slug", CLUSTER_LESSONS)
def test_a_step_that_sends_messages_shows_labelled_tokens_moving_between_two_nodes(browser: Browser, live_server_url, slug):
    ctx, page, errors = fresh(browser, "wide")
    try:
        open_lesson(page, live_server_url, slug)
        tokens = step_until_tokens(page)
        assert any(t["running"] for t in tokens), tokens
        for t in tokens:
            assert t["label"].strip() and t["from"] != t["to"] and t["nodes"], t
        assert not errors, errors
    finally:
        ctx.close()


@pytest.mark.parametrize("slug", ["replication", "committing-offsets"])
def test_with_reduced_motion_tokens_appear_at_the_receiver_without_motion(browser: Browser, live_server_url, slug):
    ctx, page, _ = fresh(browser, "wide", reduced=True)
    try:
        open_lesson(page, live_server_url, slug)
        tokens = step_until_tokens(page)
        assert all(t["animations"] == 0 and t["transition"] in ("0s", "") for t in tokens), tokens
        # Each token sits at its receiver: no nearer its sender than its receiver.
        near = page.evaluate("""() => Array.from(document.querySelectorAll("#cl-flow [data-flow]:not(.flow-dropped)")).every((n) => {
          const t = n.getBoundingClientRect(), c = (r) => [r.left + r.width / 2, r.top + r.height / 2];
          const d = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1]);
          const box = (id) => document.querySelector('#cl-boxes [data-node="' + id + '"]').getBoundingClientRect();
          return d(c(t), c(box(n.dataset.to))) <= d(c(t), c(box(n.dataset.from)));
        })""")
        assert near
    finally:
        ctx.close()


def test_every_token_has_its_line_in_the_timeline(browser: Browser, live_server_url):
    ctx, page, _ = fresh(browser, "wide", reduced=True)
    try:
        open_lesson(page, live_server_url, "replication")
        step_until_tokens(page)
        # Tokens carry their event's virtual time; the step's events are listed with theirs.
        times = page.evaluate("""() => Array.from(document.querySelectorAll("#cl-flow [data-flow]")).map((n) => Number(n.dataset.time))""")
        listed = page.evaluate("""() => Array.from(document.querySelectorAll(".st-step.current .tl-time")).map((n) => n.textContent)""")
        assert times and all(f"{t / 1000:.3f} s" in listed for t in times if t == int(t)), (times, listed)
    finally:
        ctx.close()


def test_step_one_draws_the_brokers_as_they_are(browser: Browser, live_server_url):
    ctx, page, _ = fresh(browser, "wide", reduced=True)
    try:
        for slug in ("replication", "isr-and-acks", "leader-epoch", "leader-election"):
            open_lesson(page, live_server_url, slug)
            step(page)
            up = page.evaluate("KV.lastFrame.state.brokers.filter((b) => b.alive).map((b) => b.id)")
            lanes = page.locator("#replica-lanes")
            for b in up:
                expect(page.locator(f"#cl-broker-{b} .cl-status")).not_to_contain_text("DOWN")
            held = page.evaluate("KV.lastFrame.state.lanes.map((l) => l.broker)")
            assert set(held) <= set(up), slug       # every broker is up at step 1 ...
            expect(lanes).not_to_contain_text("log closed")     # ... and no lane says otherwise
            expect(lanes).not_to_contain_text("is down")
    finally:
        ctx.close()


def test_back_shows_the_steps_own_messages(browser: Browser, live_server_url):
    ctx, page, _ = fresh(browser, "wide", reduced=True)
    try:
        open_lesson(page, live_server_url, "replication")
        step_until_tokens(page)
        step(page)
        before = page.evaluate("KV.lastFrame.state.run.step")
        page.click("#back-button")
        wait_for(page, f"KV.lastFrame.state.run.step === {before - 1}")
        wait_for(page, "document.querySelectorAll('#cl-flow [data-flow]').length > 0")
        expect(page.locator("#lanes-arrows li").first).to_be_attached()
    finally:
        ctx.close()


@pytest.mark.parametrize("slug", ["retention", "replication", "committing-offsets"])
def test_a_chart_loads_without_a_csp_error(browser: Browser, live_server_url, slug):
    ctx, page, errors = fresh(browser, "wide", reduced=True)
    try:
        open_lesson(page, live_server_url, slug)
        for _ in range(3):
            step(page)
        page.locator("[data-plotly]").first.scroll_into_view_if_needed()
        wait_for(page, "window.Plotly && document.querySelector('.js-plotly-plot')")
        page.wait_for_timeout(300)
        assert not errors, errors
    finally:
        ctx.close()


def test_a_message_dropped_at_a_cut_link_falls_there(browser: Browser, live_server_url):
    # Lesson 14, step 1: the link from the leader back to the client is cut one way, so the
    # produce's answer is dropped on it.
    ctx, page, _ = fresh(browser, "wide")
    try:
        open_lesson(page, live_server_url, "idempotence-and-transactions")
        step(page)
        wait_for(page, "document.querySelector('#cl-flow .flow-dropped')")
        fall = page.evaluate("""() => { const n = document.querySelector('#cl-flow .flow-dropped');
          const k = n.getAnimations()[0].effect.getKeyframes(), y = (f) => Number(/,\\s*(-?[\\d.]+)px\\)/.exec(f.transform)[1]);
          return { label: n.textContent, falls: y(k[k.length - 1]) - y(k[k.length - 2]), fades: k[k.length - 1].opacity }; }""")
        assert fall["label"].startswith("✗") and fall["falls"] > 20 and float(fall["fades"]) == 0, fall
    finally:
        ctx.close()


def test_a_produced_batch_travels_into_the_active_segment(browser: Browser, live_server_url):
    ctx, page, _ = fresh(browser, "wide")
    try:
        open_lesson(page, live_server_url, "segments")
        step(page)
        wait_for(page, "document.querySelector('[data-flow=\"produce-batch\"]')")
        token = page.evaluate("""() => { const n = document.querySelector('[data-flow="produce-batch"]');
          return { label: n.textContent, running: n.getAnimations().length, segment: n.dataset.segment,
                   active: KV.lastFrame.state.partitions.map((p) => String(p.active_segment)) }; }""")
        assert token["running"] and token["label"] and token["segment"] in token["active"], token
    finally:
        ctx.close()


# Each broker's lane as drawn in its box, and as the state has it.
LANES = """() => KV.lastFrame.state.lanes.filter((l) => l.alive).map((l) => {
  const g = document.getElementById("cl-broker-" + l.broker), box = g.querySelector(".cl-box").getBoundingClientRect();
  const cells = Array.from(g.querySelectorAll(".cl-cell"));
  return { broker: l.broker, records: l.records.map((r) => r.value), drawn: cells.map((c) => c.querySelector(".cl-cell-value").textContent),
    inside: cells.every((c) => { const r = c.getBoundingClientRect(); return r.left >= box.left && r.right <= box.right && r.bottom <= box.bottom; }),
    hw: !!g.querySelector(".cl-hw-mark") === (l.high_watermark >= (l.records[0] || {offset: 0}).offset) };
})"""


@pytest.mark.parametrize("size", sorted(WIDTHS))
def test_the_brokers_hold_their_replica_lanes_on_the_stage(browser: Browser, live_server_url, size):
    # Issue 17 item 2: one picture -- each broker's box holds its replica's records (value,
    # epoch), its HW; the full lanes follow below the stage.
    ctx, page, errors = fresh(browser, size, reduced=True)
    try:
        open_lesson(page, live_server_url, "replication")
        for _ in range(8):
            step(page)
        assert page.locator("#stage #replica-lanes").count() == 0
        expect(page.locator("#replica-lanes")).to_be_attached()
        lanes = page.evaluate(LANES)
        assert lanes and any(lane["records"] for lane in lanes), lanes
        for lane in lanes:
            # Lesson 8 has three records: every one fits in a box, at both widths.
            assert lane["drawn"] == lane["records"] and lane["inside"] and lane["hw"], lane
        assert not errors, errors
    finally:
        ctx.close()


# Tokens at rest, by receiver: pairs whose labels overlap, and any label outside the picture.
CROWD = """() => {
  const svg = document.querySelector("#cluster svg").getBoundingClientRect();
  const toks = Array.from(document.querySelectorAll("#cl-flow [data-flow]:not(.flow-dropped)")).map((n) => ({ to: n.dataset.to, r: n.getBoundingClientRect() }));
  let overlaps = 0;
  toks.forEach((a, i) => toks.slice(i + 1).forEach((b) => {
    if (a.to === b.to && a.r.left < b.r.right && b.r.left < a.r.right && a.r.top < b.r.bottom && b.r.top < a.r.bottom) overlaps++;
  }));
  return { n: toks.length, overlaps, outside: toks.filter((t) => t.r.left < svg.left - 1 || t.r.right > svg.right + 1).length };
}"""


@pytest.mark.parametrize("size", sorted(WIDTHS))
def test_tokens_resting_at_one_receiver_queue_rather_than_cover_each_other(browser: Browser, live_server_url, size):
    # Lesson 9, step 3 sends dozens of fetches and answers to the leader and the client.
    ctx, page, _ = fresh(browser, size, reduced=True)
    try:
        open_lesson(page, live_server_url, "isr-and-acks")
        for _ in range(3):
            step(page)
        wait_for(page, "document.querySelectorAll('#cl-flow [data-flow]').length > 1")
        crowd = page.evaluate(CROWD)
        assert crowd["n"] > 1 and crowd["overlaps"] == 0 and crowd["outside"] == 0, crowd
    finally:
        ctx.close()


# Token labels shown (opacity above 0.05) and whether each rests (has arrived, or no motion),
# and the pairs of them whose labels overlap by more than a pixel each way.
LABEL_PAIRS = """() => {
  const t = Array.from(document.querySelectorAll("#cl-flow [data-flow]:not(.flow-dropped)"))
    .filter((n) => Number(getComputedStyle(n).opacity) > 0.05).map((n) => {
      const a = n.getAnimations()[0], p = a ? a.effect.getComputedTiming().progress : 1;
      return { rest: !a || p >= 0.6, r: n.getBoundingClientRect(), label: n.textContent };
    });
  const pairs = [];
  t.forEach((a, i) => t.slice(i + 1).forEach((b) => {
    const x = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left), y = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
    if (x > 1 && y > 1) pairs.push({ rest: a.rest && b.rest, labels: [a.label, b.label] });
  }));
  return { shown: t.length, pairs };
}"""


@pytest.mark.parametrize("size", sorted(WIDTHS))
def test_resting_token_labels_never_cover_each_other_over_a_walk(browser: Browser, live_server_url, size):
    # Lesson 13's group steps send heartbeats, joins, syncs and commits to the coordinator
    # beside the replicas' fetches: the busiest picture. Labels at rest (where a learner reads
    # them) never overlap, at a receiver or across neighbours; without motion no two overlap.
    for reduced in (True, False):
        ctx, page, _ = fresh(browser, size, reduced=reduced)
        try:
            open_lesson(page, live_server_url, "committing-offsets")
            shown, covered = 0, []
            for _ in range(8):
                step(page)
                for _ in range(1 if reduced else 15):
                    page.wait_for_timeout(100)
                    seen = page.evaluate(LABEL_PAIRS)
                    shown += seen["shown"]
                    covered += [p["labels"] for p in seen["pairs"] if reduced or p["rest"]]
            assert shown and not covered, (size, reduced, shown, covered[:5])
        finally:
            ctx.close()


PC_TOKENS = """() => Array.from(document.querySelectorAll(".pc-flow [data-flow]")).map((n) => ({
  flow: n.dataset.flow, label: n.textContent, animations: n.getAnimations().length }))"""


@pytest.mark.parametrize("reduced", [False, True])
def test_lesson_7_messages_travel_from_the_engines_events(browser: Browser, live_server_url, reduced):
    # Step 1 appends twelve batches (batch_appended): each travels into the page cache. Step 4
    # appends twelve more and lets the OS write back (pages_written_back): a token carries the
    # written page to the .log's bytes on disk. Without motion they just appear.
    ctx, page, errors = fresh(browser, "wide", reduced=reduced)
    try:
        open_lesson(page, live_server_url, "flush-and-page-cache")
        seen: dict[int, list[dict]] = {}
        for _ in range(4):
            n = step(page)
            if n in (1, 4):
                wait_for(page, "document.querySelector('.pc-flow [data-flow]')")
                seen[n] = page.evaluate(PC_TOKENS)
        first = [t for t in seen[1] if t["flow"] == "produce-batch"]
        assert first and all(t["label"].endswith("370 B") for t in first), seen[1]
        assert any(t["flow"] == "write-back" and t["label"] == "page 0 · on disk" for t in seen[4]), seen[4]
        assert all((t["animations"] == 0) == reduced for t in seen[1] + seen[4]), (seen[1], seen[4])
        assert not errors, errors
    finally:
        ctx.close()


def test_play_pressed_before_the_first_frame_waits_for_it(browser: Browser, live_server_url):
    # On a loaded machine the socket opens well before the sandbox's first frame arrives. Play
    # pressed in between used to take "step 0 of 0" for the end and stop at once (the click-
    # latency bench saw one frame of lesson 10 at 8x); it waits for the frame and plays on.
    import re

    ctx, page, errors = fresh(browser, "wide", reduced=True)
    held: list = []
    release = {"open": False}

    def route(ws):
        server = ws.connect_to_server()

        def from_server(message):
            if release["open"]:
                ws.send(message)
            else:
                held.append(message)
        server.on_message(from_server)
    try:
        page.route_web_socket(re.compile(r"/ws/"), route)
        page.goto(f"{live_server_url}/lessons/replication/?lang=en")
        expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
        page.select_option("#speed", "8")
        page.click("#play-button")
        wait_for(page, "true")
        assert page.evaluate("KV.lastFrame") is None            # no frame yet: Play is waiting
        release["open"] = True
        for message in held:
            page.evaluate("(m) => KV.dispatch(JSON.parse(m))", message)
        wait_for(page, "KV.lastFrame && KV.lastFrame.state.run.step >= 2")
        assert not errors, errors
    finally:
        ctx.close()


# The stage's tabs as a screen reader and the keyboard meet them.
TABS = """() => { const list = document.querySelector("#stage .stage-tabs");
  const tabs = Array.from(list.children), panels = Array.from(document.querySelectorAll("#stage [data-stage-tab]"));
  return { role: list.getAttribute("role"), label: list.getAttribute("aria-label"), shown: list.getClientRects().length > 0,
    tabs: tabs.map((t) => ({ role: t.getAttribute("role"), selected: t.getAttribute("aria-selected"), tabindex: t.tabIndex,
      controls: t.getAttribute("aria-controls"), pressed: t.hasAttribute("aria-pressed"), focused: document.activeElement === t })),
    panels: panels.map((p) => ({ id: p.id, role: p.getAttribute("role"), by: p.getAttribute("aria-labelledby"), off: p.hasAttribute("data-tab-off") })),
    ids: tabs.map((t) => t.id) }; }"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_stage_tabs_are_an_aria_tablist_that_arrow_keys_walk(browser: Browser, live_server_url, lang):
    ctx, page, errors = fresh(browser, "phone", reduced=True)
    try:
        open_lesson(page, live_server_url, "topics-partitions-offsets", lang)
        tabs = page.evaluate(TABS)
        assert tabs["role"] == "tablist" and tabs["label"] and tabs["shown"], tabs
        assert len(tabs["tabs"]) == 2 and not any(t["pressed"] for t in tabs["tabs"]), tabs
        assert [t["role"] for t in tabs["tabs"]] == ["tab", "tab"] and [t["selected"] for t in tabs["tabs"]] == ["true", "false"], tabs
        assert [t["tabindex"] for t in tabs["tabs"]] == [0, -1], tabs          # one tab in the Tab order
        for tab, panel, tid in zip(tabs["tabs"], tabs["panels"], tabs["ids"]):
            assert tab["controls"] == panel["id"] and panel["role"] == "tabpanel" and panel["by"] == tid, tabs
        assert [p["off"] for p in tabs["panels"]] == [False, True], tabs
        page.focus("#stage .stage-tab[aria-selected='true']")
        page.keyboard.press("ArrowRight")
        tabs = page.evaluate(TABS)
        assert [t["selected"] for t in tabs["tabs"]] == ["false", "true"] and tabs["tabs"][1]["focused"], tabs
        assert [p["off"] for p in tabs["panels"]] == [True, False] and [t["tabindex"] for t in tabs["tabs"]] == [-1, 0], tabs
        page.keyboard.press("ArrowRight")         # wraps round to the first
        assert [t["selected"] for t in page.evaluate(TABS)["tabs"]] == ["true", "false"]
        page.keyboard.press("End")
        assert [t["selected"] for t in page.evaluate(TABS)["tabs"]] == ["false", "true"]
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("Home")
        assert [t["selected"] for t in page.evaluate(TABS)["tabs"]] == ["true", "false"]
        # The arrows moved between tabs, not through the lesson (← Back, → Step, End: the last step).
        page.wait_for_timeout(300)
        assert page.evaluate("KV.lastFrame.state.run.step") == 0
        # Where the window is wide enough for every part, the parts are sections again, not tab panels.
        page.set_viewport_size({"width": 1366, "height": 800})
        wait_for(page, "!document.querySelector('#stage [data-stage-tab][role]')")      # at the window's resize event
        tabs = page.evaluate(TABS)
        assert not tabs["shown"] and all(p["role"] is None and p["by"] is None for p in tabs["panels"]), tabs
        assert not errors, errors
    finally:
        ctx.close()


# Inner boxes of the stage's main picture that scroll (their content taller than the box),
# and whether the rows a lookup marks (the probe, the scan, the answer) are shown.
SCROLL_BOXES = """() => { const main = KV.stageMain();
  const boxes = Array.from(main.querySelectorAll("*")).filter((n) => { const o = getComputedStyle(n).overflowY;
    return (o === "auto" || o === "scroll") && n.scrollHeight > n.clientHeight + 1; }).map((n) => n.className || n.tagName);
  const marked = Array.from(main.querySelectorAll(".ss-row[data-mark]"));
  return { boxes, marked: marked.length, hidden: marked.filter((r) => !r.getClientRects().length).length,
           current: main.querySelector("#ss-steps li.current") ? main.querySelector("#ss-steps li.current").getClientRects().length : 1 }; }"""


@pytest.mark.parametrize("slug", ["offset-index", "time-index"])
def test_on_a_phone_lessons_3_and_4_show_the_steps_rows_without_an_inner_scroll_box(browser: Browser, live_server_url, slug):
    ctx, page, errors = fresh(browser, "phone", reduced=True)
    try:
        open_lesson(page, live_server_url, slug)
        total, marked = page.evaluate("KV.lastFrame.state.run.total"), 0
        for _ in range(total):
            n = step(page)
            check_stage(page, f"{slug} phone after step {n}")
            seen = page.evaluate(SCROLL_BOXES)
            assert not seen["boxes"], f"{slug} step {n}: scroll boxes {seen}"
            assert seen["hidden"] == 0 and seen["current"], f"{slug} step {n}: the lookup's marked rows are not shown {seen}"
            marked += seen["marked"]
        assert marked, "no step marked a row"
        # Every row is one click away, and back.
        more = page.locator("#stage .fit-more")
        expect(more).to_be_visible()
        more.click()
        assert page.evaluate("document.querySelectorAll('#stage #ss-rows > tr[data-fit-off]').length") == 0
        more.click()
        assert page.evaluate("document.querySelectorAll('#stage #ss-rows > tr[data-fit-off]').length") > 0
        assert not errors, errors
    finally:
        ctx.close()


# Each ring's numbers (bucket counts, slot numbers) as shown: the smallest font in px, and
# whether every one lies inside its ring's picture.
RING_TEXT = """() => Array.from(document.querySelectorAll("#stage .tw-ring")).map((svg) => {
  const box = svg.getBoundingClientRect(), s = box.width / svg.viewBox.baseVal.width, texts = Array.from(svg.querySelectorAll("text"));
  return { px: Math.min(...texts.map((t) => parseFloat(getComputedStyle(t).fontSize) * s)),
           inside: texts.every((t) => { const r = t.getBoundingClientRect();
             return r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5; }) }; })"""


@pytest.mark.parametrize("size", sorted(WIDTHS))
def test_lesson_15s_ring_numbers_are_readable(browser: Browser, live_server_url, size):
    ctx, page, _ = fresh(browser, size, reduced=True)
    try:
        open_lesson(page, live_server_url, "timing-wheel")
        for _ in range(page.evaluate("KV.lastFrame.state.run.total")):
            n = step(page)
            page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
            rings = page.evaluate(RING_TEXT)
            assert rings and all(r["px"] >= 11 and r["inside"] for r in rings), (size, n, rings)
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lesson_8s_sentences_point_only_at_what_is_in_view(browser: Browser, live_server_url, lang):
    # Step 5 said "Watch the HW panel", but the panel (how the leader computes the HW) is below
    # the stage -- a page away on a phone. A sentence that names the panel finds it on the
    # first screen; step 5 now points at the HW in the leader's box, on the stage.
    ctx, page, _ = fresh(browser, "phone", reduced=True)
    try:
        open_lesson(page, live_server_url, "replication", lang)
        for _ in range(page.evaluate("KV.lastFrame.state.run.total")):
            n = step(page)
            say = page.evaluate("document.getElementById('step-say').textContent")
            if "panel" in say or "面板" in say:
                top = page.evaluate("document.getElementById('hw-calc').getBoundingClientRect().top")
                assert top < page.viewport_size["height"], f"step {n} points at the HW panel, {top:.0f} px down: {say}"
            if n == 5:
                assert "0" in say and "HW" in say, say
                expect(page.locator("#cl-broker-0 .cl-box")).to_be_in_viewport()
    finally:
        ctx.close()


# Pairs of token labels shown together whose labels overlap while both are on their way.
MOVING_PAIRS = """() => {
  const t = Array.from(document.querySelectorAll("#cl-flow [data-flow]:not(.flow-dropped)"))
    .filter((n) => Number(getComputedStyle(n).opacity) > 0.05).map((n) => {
      const a = n.getAnimations()[0], p = a ? a.effect.getComputedTiming().progress : 1;
      return { moving: !!a && p !== null && p < 0.6, r: n.getBoundingClientRect(), label: n.textContent, link: [n.dataset.from, n.dataset.to].sort().join("~") };
    }).filter((x) => x.moving);
  const pairs = [];
  t.forEach((a, i) => t.slice(i + 1).forEach((b) => {
    const x = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left), y = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
    if (x > 1 && y > 1) pairs.push({ same: a.link === b.link, labels: [a.label, b.label] });
  }));
  return { moving: t.length, pairs };
}"""


def test_lesson_14s_tokens_on_their_way_keep_their_labels_apart(browser: Browser, live_server_url):
    # Lesson 14's three brokers stand side by side, their links short and busy: a step sends
    # dozens of fetches, answers, produces and transaction requests. A token takes a second
    # lane or waits until its label covers no other on the way; before, 4 samples in 5 had two
    # labels on top of each other (a fetch and its answer crossing on one link, mostly).
    ctx, page, _ = fresh(browser, "wide")
    try:
        open_lesson(page, live_server_url, "idempotence-and-transactions")
        samples = same = other = moving = 0
        for _ in range(3):
            step(page)
            for _ in range(30):
                page.wait_for_timeout(80)
                seen = page.evaluate(MOVING_PAIRS)
                samples += 1
                moving += seen["moving"]
                same += sum(p["same"] for p in seen["pairs"])
                other += sum(not p["same"] for p in seen["pairs"])
        assert moving > samples, (moving, samples)       # tokens were on their way most of the time
        # A step's first token leaves at once, even over the last step's still on their way
        # (click -> first token moving), and under load an arrival runs late of its plan: on
        # one link a glimpse in one sample of thirty at most, across links that meet one in
        # ten (0 and 4 of 90 at a load average of 14; before, 71 and 104).
        assert same <= samples // 30 and other <= samples // 10, (same, other, samples)
    finally:
        ctx.close()


@pytest.mark.parametrize("slug", SLUGS)
def test_a_page_opened_at_the_end_of_its_run_keeps_the_stage_on_the_first_screen(browser: Browser, live_server_url, slug):
    # The run is kept per session: a lesson finished earlier (or the other language's page)
    # opens at its end, with a line saying why Step is off -- 24 px more above the picture,
    # which the fit must make room for at every size.
    ctx, page, errors = fresh(browser, "short", reduced=True)
    try:
        open_lesson(page, live_server_url, slug)
        total = page.evaluate("KV.lastFrame.state.run.total")
        page.locator("#scrubber").fill(str(total))
        page.locator("#scrubber").dispatch_event("change")
        wait_for(page, f"KV.lastFrame.state.run.step === {total}")
        for size in ("short", "wide", "phone"):
            page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[size])))
            open_lesson(page, live_server_url, slug)
            wait_for(page, f"KV.lastFrame.state.run.step === {total}")
            expect(page.locator("#next-step.run-end")).to_be_visible()
            check_stage(page, f"{slug} {size} opened at the end of its run")
        assert not errors, errors
    finally:
        ctx.close()


# Lesson 17's picture: the gap between the controllers' row and the brokers' (SVG units),
# resting tokens that cover a box, and the step's sentence as wide as its box or not.
QUORUM_ROWS = """() => { const c = KV.clusterNode(100), b = KV.clusterNode(0);
  const boxes = Array.from(document.querySelectorAll("#cl-boxes .cl-box")).map((n) => n.getBoundingClientRect());
  const toks = Array.from(document.querySelectorAll("#cl-flow .flow-still:not(.flow-dropped)")).map((n) => n.getBoundingClientRect());
  const say = document.getElementById("step-say");
  return { gap: b.y - (c.y + c.h), tokens: toks.length,
    covering: toks.filter((t) => boxes.some((r) => t.left < r.right && r.left < t.right && t.top < r.bottom - 1 && r.top + 1 < t.bottom)).length,
    sayFits: say.scrollWidth <= say.clientWidth + 1 }; }"""


def test_lesson_17s_controllers_stand_a_short_gap_above_the_brokers(browser: Browser, live_server_url):
    # The gap held 92 px of nothing between the two rows; now 60, and the tokens resting
    # under a controller keep to it rather than lie on a broker's box.
    ctx, page, _ = fresh(browser, "wide", reduced=True)
    try:
        open_lesson(page, live_server_url, "controller-quorum")
        tokens = 0
        for _ in range(8):
            n = step(page)
            seen = page.evaluate(QUORUM_ROWS)
            assert seen["gap"] <= 64 and seen["covering"] == 0 and seen["sayFits"], (n, seen)
            tokens += seen["tokens"]
        assert tokens
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lesson_16s_sentences_name_the_consumers_as_the_picture_does(browser: Browser, live_server_url, lang):
    # The group diagram names each consumer by its client id (and its connection): member-b-1015,
    # member-k-1018. Step 8's sentence said "kcat", a name the picture never shows; it now
    # says kcat joins as member-k. Every consumer a sentence names is in the picture, and a
    # sentence or question that speaks of kcat names its consumer.
    import re

    ctx, page, _ = fresh(browser, "wide", reduced=True)
    try:
        open_lesson(page, live_server_url, "what-your-client-says", lang)
        named = 0
        for _ in range(page.evaluate("KV.lastFrame.state.run.total")):
            n = step(page)
            say = page.evaluate("document.getElementById('step-say').textContent")
            # The question asks about the next step, whose consumer may not have joined yet.
            question = page.evaluate("(document.getElementById('predict-question') || {}).textContent || ''")
            shown = page.evaluate("""() => Array.from(document.querySelectorAll('[data-diagram="consumer-group"] [data-consumer]'))
              .map((n) => n.dataset.consumer)""")
            for name in re.findall(r"\bmember-[a-z]\b", say):
                named += 1
                assert any(s.startswith(name + "-") for s in shown), (n, name, shown, say)
            for text in (say, question):
                assert "kcat" not in text or "member-k" in text, (n, text)
        assert named >= 3
    finally:
        ctx.close()
