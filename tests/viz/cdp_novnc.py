#!/usr/bin/python3
"""Open a viz session URL (vgpu-viz.html) in headless Chromium and report what the page shows.

Chromium is driven over the DevTools protocol on --remote-debugging-pipe (fd 3 in, fd 4 out,
NUL-separated JSON), so only the Python standard library is needed.

Usage:
  cdp_novnc.py URL --expect banner  [--screenshot OUT.png] [--timeout S]
      exit 0 once the guest banner (background + colour bars) shows in noVNC's canvas
  cdp_novnc.py URL --expect desktop [--screenshot OUT.png] [--timeout S]
      exit 0 once a screenshot shows the desktop guest's Xfce and PyMOL's structure
      (desktop_check.py's rule; checked every 2 s); prints when Xfce and when PyMOL showed
  cdp_novnc.py URL --expect connected --then ended [--screenshot OUT.png] [--timeout S]
      once logged in, print "cdp_novnc: connected" and go on; exit 0 when the page then says the
      session ended
  cdp_novnc.py URL --expect bad-password|no-session [--screenshot OUT.png] [--timeout S]
      exit 0 once the page says why it cannot show the session (its #status data-state), and the
      banner never showed
Prints one line: outcome, seconds from navigation to 'Connected' and to the banner, the page's
state and status text. Never prints the URL (it carries the session secret).
"""
import argparse
import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BG = (0, 96, 160)
BARS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (255, 0, 255), (0, 255, 255)]

# Samples noVNC's canvas where the banner has its background (top strip) and colour bars
# (bottom strip). Coordinates are fractions of the guest framebuffer (1024x768 in the guest).
PROBE = """(() => {
  const el = document.getElementById('status') || {dataset: {}};
  const st = el.textContent || '', state = el.dataset.state || '';
  const c = document.querySelector('#screen canvas') || document.querySelector('canvas');
  if (!c || !c.width) return JSON.stringify({st, state, w: 0});
  const g = c.getContext('2d');
  const px = (fx, fy) => Array.from(g.getImageData(Math.floor(c.width * fx), Math.floor(c.height * fy), 1, 1).data.slice(0, 3));
  const bars = [];
  for (let i = 0; i < 6; i++) bars.push(px((40 + (i + 0.5) * 157) / 1024, (768 - 110) / 768));
  return JSON.stringify({st, state, w: c.width, h: c.height, bg: px(0.5, 0.13), bars});
})()"""


def near(p, c, tol=24):
    return p is not None and all(abs(a - b) <= tol for a, b in zip(p, c))


def banner_visible(s):
    return near(s.get("bg"), BG) and all(near(p, c, 40) for p, c in zip(s.get("bars", []), BARS)) \
        and len(s.get("bars", [])) == 6


# The page's final states: why it shows no session (web/vgpu-viz.html).
FAILED_STATES = ("password-needed", "bad-password", "ended", "no-session", "disconnected")


class Chromium:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="viz-chromium-")
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def child_fds():
            a = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)  # dup2 leaves 3 and 4 inheritable across exec
            os.dup2(b, 4)

        args = ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={self.profile}", "--window-size=1100,900", "--remote-debugging-pipe",
                "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.next_id = 0
        page = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)

    def call(self, method, params=None, session=False):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self.buf:
                chunk = os.read(self.from_r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        return r["result"].get("value")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--expect", choices=["banner", "desktop", "connected", "bad-password", "password-needed",
                                         "no-session"],
                    required=True)
    ap.add_argument("--then", choices=["ended"], help="once connected, wait until the page says this")
    ap.add_argument("--screenshot")
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()

    browser = Chromium()
    try:
        t0 = time.monotonic()
        browser.call("Page.navigate", {"url": a.url}, session=True)
        t_connected = t_banner = t_failed = t_then = t_desktop = t_pymol = None
        t_checked = 0.0
        checks = {}
        shot = os.path.join(browser.profile, "check.png")
        if a.expect == "desktop":
            # Only here: it needs PIL, which the other checks do without (any python3 runs them).
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import desktop_check
        last = {}
        while time.monotonic() - t0 < a.timeout:
            last = json.loads(browser.evaluate(PROBE) or "{}")
            if t_connected is None and last.get("state") == "connected":
                t_connected = time.monotonic()
                if a.expect == "connected":
                    if not a.then:
                        break
                    print("cdp_novnc: connected", flush=True)
            if a.expect == "banner" and banner_visible(last):
                t_banner = time.monotonic()
                break
            if a.expect == "desktop" and t_connected is not None and time.monotonic() - t_checked >= 2.0:
                t_checked = time.monotonic()
                browser.screenshot(shot)
                checks = desktop_check.analyse(shot)
                if checks["desktop"] and t_desktop is None:
                    t_desktop = time.monotonic()
                if checks["desktop"] and checks["pymol"]:
                    t_pymol = time.monotonic()
                    break
            if t_connected is not None and a.then and last.get("state") == a.then:
                t_then = time.monotonic()
                break
            if t_connected is None and last.get("state") in FAILED_STATES:
                t_failed = time.monotonic()
                time.sleep(1.0)  # and it stays that way: no late banner
                last = json.loads(browser.evaluate(PROBE) or "{}")
                if banner_visible(last):
                    t_banner = time.monotonic()
                break
            time.sleep(0.05)
        if a.screenshot:
            browser.screenshot(a.screenshot)
    finally:
        browser.close()

    def since(t):
        return f"{t - t0:.3f}s" if t else "never"

    if a.expect == "banner":
        ok = t_banner is not None
    elif a.expect == "desktop":
        ok = t_pymol is not None
        print(f"cdp_novnc: from navigation: Xfce desktop {since(t_desktop)}, PyMOL's structure {since(t_pymol)}; "
              f"last check {checks}")
    elif a.expect == "connected":
        ok = t_connected is not None and (not a.then or t_then is not None)
    else:
        ok = t_failed is not None and t_banner is None and last.get("state") == a.expect
    print(f"cdp_novnc: expect={a.expect}{' then ' + a.then if a.then else ''} {'OK' if ok else 'FAIL'}; "
          f"from navigation: connected {since(t_connected)}, banner {since(t_banner)}, failed {since(t_failed)}"
          f"{', ' + a.then + ' ' + since(t_then) if a.then else ''}; state {last.get('state', '')!r} "
          f"status {last.get('st', '')!r}; canvas {last.get('w', 0)}x{last.get('h', 0)} bg {last.get('bg')}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
