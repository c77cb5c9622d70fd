"""How far each lesson's stage runs past the first screen, at 1366×800, 1280×720 and 390×844
(issue 17): for every lesson, walk every step and print, per size, the worst over the walk of
how many px the main picture's bottom, and the step's sentence's bottom, are below the first
viewport (0: inside), and the step controls' height. Reduced motion, English unless --lang.

    .venv/bin/python bench/stage_fit.py [--only slug,slug] [--lang zh] [--sizes 1366x800,390x844]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_click_latency import poll, served_browser  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SIZES = ((1366, 800), (1280, 720), (390, 844))

GEOMETRY = """() => {
  const doc = (n) => { const r = n.getBoundingClientRect(); return { top: r.top + scrollY, bottom: r.bottom + scrollY }; };
  const m = KV.stageMain();
  // The main picture with the parts the stage marks to go with it (lesson 13's lag row).
  return { main: { top: doc(m).top, bottom: KV.stageBottom() }, say: doc(document.getElementById("narration")),
           controls: document.getElementById("controls").getBoundingClientRect().height, vh: innerHeight };
}"""


def lessons() -> list[tuple[int, str]]:
    out = []
    for en in (REPO / "kafkaviz" / "lessons" / "content").glob("*.en.toml"):
        for line in en.read_text().splitlines():
            if line.startswith("number"):
                out.append((int(line.split("=")[1]), en.name.removesuffix(".en.toml")))
                break
    return sorted(out)


def walk(page, url: str, slug: str, lang: str) -> dict:
    page.goto(f"{url}/lessons/{slug}/?lang={lang}")
    poll(page, "window.KV && KV.lastFrame && KV.lastFrame.state && KV.lastFrame.state.run")
    total = page.evaluate("KV.lastFrame.state.run.total")
    worst = {"main": -1e9, "say": -1e9, "controls": 0.0, "at": {}, "over": {}}
    for n in range(total + 1):
        if n:
            page.click("#step-button")
            poll(page, f"KV.lastFrame.state.run.step === {n}")
        page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        g = page.evaluate(GEOMETRY)
        for k in ("main", "say"):
            over = g[k]["bottom"] - g["vh"]
            if over > worst[k]:
                worst[k], worst["at"][k] = over, n
        worst["controls"] = max(worst["controls"], g["controls"])
        if g["main"]["bottom"] - g["vh"] > 3:
            worst["over"][n] = round(g["main"]["bottom"] - g["vh"])
    return worst


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--lang", default="en")
    ap.add_argument("--sizes", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    sizes = [tuple(map(int, s.split("x"))) for s in args.sizes.split(",")] if args.sizes else SIZES
    results = {}
    print(f"load {os.getloadavg()[0]:.2f}; px below the first screen (worst step), goal <= 0", flush=True)
    with served_browser("kafkaviz-fit-") as (url, browser):
        for w, h in sizes:
            ctx = browser.new_context(viewport={"width": w, "height": h}, reduced_motion="reduce")
            page = ctx.new_page()
            for number, slug in lessons():
                if only and slug not in only:
                    continue
                r = walk(page, url, slug, args.lang)
                results[f"{number}.{w}"] = r
                print(f"{number:>2} {slug:<30} {w}x{h}: main {r['main']:+6.0f} (step {r['at']['main']}), "
                      f"sentence {r['say']:+6.0f} (step {r['at']['say']}), controls {r['controls']:.0f} px"
                      + (f"; over at steps {r['over']}" if r["over"] else ""), flush=True)
            ctx.close()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
