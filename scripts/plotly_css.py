"""Write plotly.js's own stylesheet to static/vendor/plotly-cartesian-<version>.css.

plotly.js injects its CSS with a <style> element at run time, which a Content-Security-Policy
without 'unsafe-inline' styles blocks (the charts then lose their layering and modebar).
This loads the vendored bundle in Debian's chromium, draws one chart, and saves the rules
plotly injected, so pages can link them as a file. Run after updating the bundle:

    .venv/bin/python scripts/plotly_css.py 4.1.1
"""
import pathlib
import sys

from playwright.sync_api import sync_playwright

VENDOR = pathlib.Path(__file__).resolve().parents[1] / "static" / "vendor"


def main(version: str) -> None:
    js = (VENDOR / f"plotly-cartesian-{version}.min.js").read_text()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
        page = browser.new_page()
        page.set_content("<html><head></head><body><div id='g'></div></body></html>")
        page.add_script_tag(content=js)
        page.evaluate("() => Plotly.newPlot('g', [{type: 'heatmap', z: [[1, 2], [3, 4]]}], {title: {text: 't'}})")
        rules = page.evaluate("""() => { const out = [];
            for (const s of document.styleSheets) {
              if (!s.ownerNode || s.ownerNode.id !== 'plotly.js-style-global') continue;
              for (const r of s.cssRules) out.push(r.cssText);
            } return out; }""")
        browser.close()
    head = (f"/* plotly.js {version}'s own stylesheet, as its bundle injects it at run time (id\n"
            f" * plotly.js-style-global), saved as a file so charts keep their layout under a\n"
            f" * Content-Security-Policy without 'unsafe-inline' styles. Made by scripts/plotly_css.py. */\n")
    (VENDOR / f"plotly-cartesian-{version}.css").write_text(head + "\n".join(rules) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "4.1.1")
