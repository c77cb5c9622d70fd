"""Screenshots of every lesson page, as a person would look at them: 1366×800, 1280×720 and 390×844,
English and (where a lesson is translated) Chinese, after the first frame arrived and a few
guided steps ran. Written to a temp dir (never committed); look at them.

With --walk, the first screen only (what a learner sees without scrolling) after every
step of the lesson, as <slug>.<lang>.<width>.s<step>.png: does the picture show what the
step's sentence says?

    .venv/bin/python bench/screenshots.py [--out DIR] [--steps 3] [--only slug,slug] [--lang zh] [--sizes 1280x720] [--walk | --first]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_click_latency import served_browser  # noqa: E402  (one way to start daphne for benches)

REPO = Path(__file__).resolve().parents[1]
SIZES = ((1366, 800), (1280, 720), (390, 844))
SLICE = 1400


def pages() -> list[tuple[str, str]]:
    content = REPO / "kafkaviz" / "lessons" / "content"
    out = []
    for en in sorted(content.glob("*.en.toml")):
        slug = en.name.removesuffix(".en.toml")
        out.append((slug, "en"))
        if (content / f"{slug}.zh.toml").exists():
            out.append((slug, "zh"))
    return out


def walk(page, stem: Path) -> None:
    """The first screen at the start and after every step (reduced motion: tokens rest)."""
    page.wait_for_selector("#conn-status[data-state=open]", timeout=10000)
    time.sleep(0.4)
    # The other language's walk left this session's sandbox at its end: back to the start.
    if page.get_attribute("#back-button", "aria-disabled") != "true":
        page.locator("#scrubber").fill("0")
        page.locator("#scrubber").dispatch_event("change")
        page.wait_for_selector("#back-button[aria-disabled=true]", timeout=10000)
    n = 0
    while True:
        time.sleep(0.4)
        page.screenshot(path=f"{stem}.s{n:02d}.png")
        if page.get_attribute("#step-button", "aria-disabled") == "true" or n >= 30:
            break
        page.click("#step-button")
        n += 1
    print(f"{stem.name}: {n + 1} first screens")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--walk", action="store_true", help="the first screen after every step")
    ap.add_argument("--first", action="store_true", help="the first screen only (no slices), after --steps steps")
    ap.add_argument("--lang", default="", help="only this language (en, zh)")
    ap.add_argument("--sizes", default="", help="only these sizes, e.g. 1280x720,390x844")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="kafkaviz-shots-"))
    out.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    with served_browser("kafkaviz-shots-") as (url, browser):
        sizes = [tuple(map(int, s.split("x"))) for s in args.sizes.split(",")] if args.sizes else SIZES
        for width, height in sizes:
            ctx = browser.new_context(viewport={"width": width, "height": height}, reduced_motion="reduce")
            page = ctx.new_page()
            for slug, lang in pages():
                if (only and slug not in only) or (args.lang and lang != args.lang):
                    continue
                page.goto(f"{url}/lessons/{slug}/?lang={lang}")
                if args.walk:
                    walk(page, out / f"{slug}.{lang}.{width}")
                    continue
                try:
                    page.wait_for_selector("#conn-status[data-state=open]", timeout=10000)
                    for _ in range(args.steps):
                        if page.get_attribute("#step-button", "aria-disabled") == "true":
                            break
                        page.click("#step-button")
                        time.sleep(0.4)
                except Exception as exc:  # noqa: BLE001 - a page without a sandbox still gets its shot
                    print(f"  {slug} {lang} {width}: {type(exc).__name__}")
                time.sleep(0.5)
                if args.first:
                    page.screenshot(path=str(out / f"{slug}.{lang}.{width}.first.png"))
                    continue
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                height = page.evaluate("document.documentElement.scrollHeight")
                # Slices a viewer can show at full size (a 390 px page is ~6,000 px tall).
                for i, top in enumerate(range(0, height, SLICE)):
                    path = out / f"{slug}.{lang}.{width}.{i}.png"
                    page.screenshot(path=str(path), full_page=True,
                                    clip={"x": 0, "y": top, "width": width, "height": min(SLICE, height - top)})
                print(f"{slug} {lang} {width}: {i + 1} slices, horizontal overflow {overflow} px")
            ctx.close()


if __name__ == "__main__":
    main()
