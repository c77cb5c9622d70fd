"""Screenshots of every lesson page, as a person would look at them: 1366 px and 390 px
wide, English and (where a lesson is translated) Chinese, after the first frame arrived
and a few guided steps ran. Written to a temp dir (never committed); look at them.

    .venv/bin/python bench/screenshots.py [--out DIR] [--steps 3] [--only slug,slug]
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
WIDTHS = (1366, 390)
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="kafkaviz-shots-"))
    out.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    with served_browser("kafkaviz-shots-") as (url, browser):
        for width in WIDTHS:
            ctx = browser.new_context(viewport={"width": width, "height": 900}, reduced_motion="reduce")
            page = ctx.new_page()
            for slug, lang in pages():
                if only and slug not in only:
                    continue
                page.goto(f"{url}/lessons/{slug}/?lang={lang}")
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
