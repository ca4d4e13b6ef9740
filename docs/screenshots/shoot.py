#!/usr/bin/env python3
"""Screenshots of the site's pages, as a person sees them, for issue notes and docs/site.md.

    python3 docs/screenshots/shoot.py --odqs target/debug/odqs --out docs/screenshots/after

Starts `odqs serve` on a fresh SQLite file with the demo datasets, drives Debian's Chromium
through ChromeDriver (the W3C WebDriver protocol, spoken here with the standard library only),
signs up, and takes each page at a phone's width (390 px) and a laptop's (1280 px), the whole
page down to SHOT_MAX_HEIGHT. The same script takes the "before" pictures from an older
binary: a page that binary does not have is shot as it answers (a 404 is a finding too), and
its explorer is driven by the element ids both explorers share.
"""

import argparse
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WIDTHS = {"phone": (390, 844), "laptop": (1280, 800)}
# A long page is shot down to this many CSS pixels.
SHOT_MAX_HEIGHT = 2400
# Seconds any wait lasts at most.
WAIT = 30
EMAIL = "screenshots@example.org"
PASSWORD = "correct horse battery"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, form=False):
    data = None
    headers = {}
    if body is not None:
        if form:
            data = urllib.parse.urlencode(body).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        else:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def wait_for(check, what):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    raise SystemExit(f"shoot: timed out waiting for {what}")


class Browser:
    """One WebDriver session of headless Chromium."""

    def __init__(self, driver):
        self.driver = driver
        status, body = http("POST", driver + "/session", {
            "capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                             "--disable-dev-shm-usage", "--hide-scrollbars",
                             "--window-size=1280,800"],
                },
            }},
        })
        if status != 200:
            raise SystemExit(f"shoot: no browser session: {body[:300]!r}")
        self.session = driver + "/session/" + json.loads(body)["value"]["sessionId"]

    def command(self, method, path, body=None):
        status, answer = http(method, self.session + path, body)
        value = json.loads(answer)["value"]
        if status != 200:
            raise RuntimeError(f"{path}: {value}")
        return value

    def go(self, url):
        self.command("POST", "/url", {"url": url})

    def run(self, script, *args):
        return self.command("POST", "/execute/sync", {"script": script, "args": list(args)})

    def until(self, script, what):
        wait_for(lambda: self.run(script), what)

    def find(self, css):
        value = self.command("POST", "/element", {"using": "css selector", "value": css})
        return next(iter(value.values()))

    def type(self, css, text):
        self.command("POST", f"/element/{self.find(css)}/value", {"text": text})

    def click(self, css):
        self.command("POST", f"/element/{self.find(css)}/click", {})

    def size(self, width, height):
        self.command("POST", "/goog/cdp/execute", {
            "cmd": "Emulation.setDeviceMetricsOverride",
            "params": {"width": width, "height": height, "deviceScaleFactor": 1,
                       "mobile": width < 500},
        })

    def shoot(self, path, width, height):
        """The page at `width`, as tall as it is (at most SHOT_MAX_HEIGHT)."""
        self.size(width, height)
        time.sleep(0.3)  # a relayout after the resize; nothing is asserted on it
        tall = self.run("return document.documentElement.scrollHeight;")
        self.size(width, max(height, min(int(tall), SHOT_MAX_HEIGHT)))
        time.sleep(0.3)
        png = base64.b64decode(self.command("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)
        self.size(width, height)


def settled(browser):
    """The explorer's status line is empty: its last request answered."""
    browser.until(
        "const s = document.getElementById('status'); "
        "return s && s.textContent === '' && document.querySelectorAll('#records tbody tr').length > 0;",
        "the explorer's answer",
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--odqs", required=True, help="the odqs binary")
    parser.add_argument("--out", required=True, help="directory of the PNG files")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="odqs-shots-")
    port, driver_port = free_port(), free_port()
    site = f"http://127.0.0.1:{port}"
    env = dict(os.environ, DATABASE_URL=f"sqlite://{scratch}/odqs.db",
               ODQS_LISTEN=f"127.0.0.1:{port}", ODQS_API_RATE_LIMIT="100000")
    server = subprocess.Popen([os.path.abspath(args.odqs), "serve"], env=env, cwd=scratch,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    chromedriver = subprocess.Popen([CHROMEDRIVER, f"--port={driver_port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: http("GET", site + "/readyz")[0] == 200, "odqs /readyz")
        wait_for(lambda: http("GET", f"http://127.0.0.1:{driver_port}/status")[0] == 200,
                 "chromedriver")
        shots(Browser(f"http://127.0.0.1:{driver_port}"), site, args.out)
    finally:
        server.terminate()
        chromedriver.terminate()
        server.wait()
        chromedriver.wait()


def shots(browser, site, out):
    def every_width(name, prepare=None):
        for label, (width, height) in WIDTHS.items():
            browser.size(width, height)
            if prepare:
                prepare()
            browser.shoot(os.path.join(out, f"{name}-{label}.png"), width, height)
            print(f"shoot: {name}-{label}.png", file=sys.stderr)

    def page(path):
        return lambda: browser.go(site + path)

    every_width("home", page("/"))
    every_width("docs", lambda: (browser.go(site + "/docs"), time.sleep(2)))
    every_width("graphql", lambda: (browser.go(site + "/graphql"), time.sleep(2)))
    every_width("catalog", page("/catalog"))

    # Signed up in the browser, through the form and its CSRF token.
    browser.go(site + "/signup")
    browser.type("#email", EMAIL)
    browser.type("#password", PASSWORD)
    browser.click("form[action='/signup'] button[type=submit]")
    browser.until("return !location.pathname.startsWith('/signup');", "signed up")

    # The device page with a real request waiting for approval.
    status, body = http("POST", site + "/api/v1/auth/device",
                        {"client_id": "screenshots", "scope": "read"}, form=True)
    if status == 200:
        uri = json.loads(body)["verification_uri_complete"]
        every_width("device", page(urllib.parse.urlparse(uri)._replace(
            scheme="", netloc="").geturl()))

    # The account page as it shows a token just made.
    browser.go(site + "/account")
    browser.type("#name", "notebook")
    browser.click("form[action='/account/tokens'] button[type=submit]")
    browser.until("return !!document.getElementById('new-token');", "a new token")
    every_width("account")

    # The explorer: flights with statistics by carrier, then the scenic spots (with their map).
    def flights_with_statistics():
        browser.go(site + "/explore?dataset=flights&group_by=carrier&field=dep_delay&bars=avg")
        browser.until("return document.querySelector(\"#dataset option[value='flights']\");",
                      "the datasets")
        if browser.run("return document.getElementById('dataset').value;") != "flights":
            # An explorer whose view is not in its URL: picked and asked by hand.
            browser.click("#dataset option[value='flights']")
            settled(browser)
            browser.click("#group-by option[value='carrier']")
            browser.click("#stat-field option[value='dep_delay']")
            browser.click("#metric option[value='avg']")
            browser.click("#show-stats")
        settled(browser)
        browser.until("return document.querySelector('#stats svg, #stats table');", "statistics")
        time.sleep(0.5)

    def scenic_spots():
        browser.go(site + "/explore?dataset=tw-scenic-spots")
        browser.until("return document.querySelector(\"#dataset option[value='tw-scenic-spots']\");",
                      "the datasets")
        if browser.run("return document.getElementById('dataset').value;") != "tw-scenic-spots":
            browser.click("#dataset option[value='tw-scenic-spots']")
        settled(browser)
        browser.run("const m = document.getElementById('map'); return m && m.hidden;")
        time.sleep(1.5)

    def scenic_spots_near():
        browser.go(site + "/explore?dataset=tw-scenic-spots&near=24.07,120.54,20km&sort=_distance%3E")
        settled(browser)
        time.sleep(1.5)

    every_width("explore-flights-statistics", flights_with_statistics)
    every_width("explore-scenic-spots", scenic_spots)
    browser.go(site + "/explore")
    if browser.run("return !!document.getElementById('map-near');"):
        every_width("explore-scenic-spots-near", scenic_spots_near)


if __name__ == "__main__":
    main()
