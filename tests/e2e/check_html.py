#!/usr/bin/env python3
"""tests/e2e/check_html.py: render a ladder HTML page (`--format html` of
`ladder compare`, `ladder run` or `ladder export`) in headless Chromium and
check that its charts really drew.

    check_html.py [--charts ID,ID,...] PAGE.html SCREENSHOT.png

Runs Chromium twice on the page, offline: once with --dump-dom (after the
page's inline script has written each chart's rendered size into
data-rendered="WxH"), once with --screenshot. Checks that the charts (by
default a comparison's five: chart-tokens, chart-speedup, chart-memory,
chart-dt and chart-breakdown; a run's page has the first three) are present,
rendered larger than 50x50 px, and draw data (rect/polyline/circle elements
of class "mark": bars, boxes, lines, points; legend swatches do not count),
and that the screenshot is a PNG over 10 kB. Prints each check; exits 0 if
all pass.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser

CHARTS = ("chart-tokens", "chart-speedup", "chart-memory", "chart-dt", "chart-breakdown")
MARK_TAGS = ("rect", "polyline", "circle")
MIN_SIZE_PX = 50
MIN_PNG_BYTES = 10 * 1024
TIMEOUT_S = 60


class ChartCollector(HTMLParser):
    """Per svg.chart: its data-rendered size and how many rect/polyline/circle it holds."""

    def __init__(self):
        super().__init__()
        self.charts = {}  # id -> {"rendered": "WxH" or None, "rect": n, ...}
        self.current = None
        self.svg_depth = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            if self.current is None and "chart" in (a.get("class") or "").split():
                self.current = a.get("id") or f"unnamed-{len(self.charts)}"
                self.charts[self.current] = {"rendered": a.get("data-rendered"), "marks": 0,
                                             **{t: 0 for t in MARK_TAGS}}
                self.svg_depth = 0
            if self.current is not None:
                self.svg_depth += 1
        elif self.current is not None and tag in MARK_TAGS:
            self.charts[self.current][tag] += 1
            # data-bearing shapes (bars, boxes, points, lines) carry class "mark"; legends do not
            self.charts[self.current]["marks"] += "mark" in (a.get("class") or "").split()

    def handle_startendtag(self, tag, attrs):
        if tag != "svg":
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "svg" and self.current is not None:
            self.svg_depth -= 1
            if self.svg_depth == 0:
                self.current = None


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(chromium, profile_dir, extra_args, page_url):
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--hide-scrollbars", "--no-first-run", "--disable-extensions", "--disable-background-networking",
           f"--user-data-dir={profile_dir}", "--window-size=1400,2400", "--virtual-time-budget=5000",
           *extra_args, page_url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)


def main(argv):
    parser = argparse.ArgumentParser(prog="check_html.py", description="check that a ladder page's charts drew")
    parser.add_argument("--charts", default=",".join(CHARTS), help="the chart ids that must draw (comma-separated)")
    parser.add_argument("page")
    parser.add_argument("screenshot")
    args = parser.parse_args(argv[1:])
    charts = [c for c in args.charts.split(",") if c]
    page, screenshot = os.path.abspath(args.page), os.path.abspath(args.screenshot)
    if not os.path.isfile(page):
        print(f"check_html: FAIL: page {page} does not exist")
        return 1
    chromium = find_chromium()
    if not chromium:
        print("check_html: FAIL: no chromium or chromium-browser on PATH; "
              "scripts/bootstrap installs it (apt-get install -y chromium)")
        return 1

    failures = []

    def check(ok, what):
        print(f"check_html: {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            failures.append(what)

    url = "file://" + page
    with tempfile.TemporaryDirectory(prefix="check_html.") as profile:
        try:
            dom = run_chromium(chromium, os.path.join(profile, "dom"), ["--dump-dom"], url)
            if os.path.exists(screenshot):
                os.remove(screenshot)
            os.makedirs(os.path.dirname(screenshot) or ".", exist_ok=True)
            shot = run_chromium(chromium, os.path.join(profile, "shot"), [f"--screenshot={screenshot}"], url)
        except subprocess.TimeoutExpired as e:
            print(f"check_html: FAIL: chromium did not finish within {TIMEOUT_S} s: {' '.join(e.cmd[:2])} ...")
            return 1
    check(dom.returncode == 0 and "<svg" in dom.stdout,
          f"{chromium} --dump-dom exited {dom.returncode} with {len(dom.stdout)} bytes of DOM")
    if dom.returncode != 0:
        print(dom.stderr[-2000:])

    collector = ChartCollector()
    collector.feed(dom.stdout)
    for chart_id in charts:
        chart = collector.charts.get(chart_id)
        if chart is None:
            check(False, f"svg.chart#{chart_id} present")
            continue
        rendered = chart["rendered"] or ""
        try:
            width, height = (int(v) for v in rendered.split("x"))
        except ValueError:
            width = height = 0
        check(width > MIN_SIZE_PX and height > MIN_SIZE_PX,
              f"#{chart_id} rendered at {rendered or 'unknown size (the inline script did not run)'} px "
              f"(need > {MIN_SIZE_PX}x{MIN_SIZE_PX})")
        counts = ", ".join(f"{tag}={chart[tag]}" for tag in MARK_TAGS)
        check(chart["marks"] > 0, f"#{chart_id} draws data: {chart['marks']} marks ({counts})")

    size = os.path.getsize(screenshot) if os.path.exists(screenshot) else 0
    with open(screenshot, "rb") if size else open(os.devnull, "rb") as f:
        is_png = f.read(8) == b"\x89PNG\r\n\x1a\n"
    check(shot.returncode == 0 and is_png and size > MIN_PNG_BYTES,
          f"screenshot {screenshot}: {'PNG' if is_png else 'not a PNG'}, {size} bytes (need > {MIN_PNG_BYTES})")
    if shot.returncode != 0:
        print(shot.stderr[-2000:])

    print(f"check_html: {'PASS' if not failures else f'{len(failures)} check(s) failed'}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
