#!/usr/bin/python3
"""Does a screenshot of a viz session show the desktop guest's Xfce desktop, and PyMOL with the
demo structure? The one owner of that rule: the end-to-end test applies it to Chromium's
screenshots while it waits (cdp_novnc.py --expect desktop), and its own test applies it to
recorded screenshots with and without PyMOL (fixtures/).

The colours come from the image's recipe (vizfrontend/guest/desktop): Xfce 4.18's default
background and panel, and show-structure.py's magenta cartoon on PyMOL's black viewer. Fractions,
not pixel positions, so the rule holds at any geometry and browser scaling.

Usage: desktop_check.py PNG [--expect desktop|pymol]   (exit 0 when it holds; prints the numbers)
"""
import argparse
import sys

from PIL import Image

XFCE_BACKGROUND = (21, 34, 51)
XFCE_PANEL = (246, 245, 244)


def _near(p, c, tol):
    return abs(p[0] - c[0]) <= tol and abs(p[1] - c[1]) <= tol and abs(p[2] - c[2]) <= tol


def _magenta(p):
    return p[0] > 170 and p[1] < 100 and p[2] > 170


def _black(p):
    return p[0] < 16 and p[1] < 16 and p[2] < 16


def analyse(path):
    """The screenshot's numbers and verdicts: desktop (Xfce is up), pymol (the structure shows)."""
    im = Image.open(path).convert("RGB")
    while im.size[0] > 700:  # the rule is in fractions; a quarter of the pixels tell the same, 4x sooner
        im = im.reduce(2)
    w, h = im.size
    px = im.load()
    total = w * h
    background = panel = magenta = 0
    left, top, right, bottom = w, h, -1, -1
    for y in range(h):
        for x in range(w):
            p = px[x, y]
            if _near(p, XFCE_BACKGROUND, 6):
                background += 1
            elif _near(p, XFCE_PANEL, 4):
                panel += 1
            elif _magenta(p):
                magenta += 1
                left, top, right, bottom = min(left, x), min(top, y), max(right, x), max(bottom, y)
    r = {"size": f"{w}x{h}", "background": background / total, "panel": panel / total,
         "magenta": magenta / total, "magenta_width": 0.0, "black_around_magenta": 0.0}
    if magenta:
        r["magenta_width"] = (right - left + 1) / w
        # PyMOL's viewer is black around the structure: look at a frame a tenth wider on each side.
        mx, my = (right - left) // 10 + 1, (bottom - top) // 10 + 1
        box = [(x, y) for y in range(max(0, top - my), min(h, bottom + my + 1))
               for x in range(max(0, left - mx), min(w, right + mx + 1))]
        others = [px[x, y] for x, y in box if not _magenta(px[x, y])]
        r["black_around_magenta"] = sum(1 for p in others if _black(p)) / max(1, len(others))
    r["desktop"] = r["background"] >= 0.05 and r["panel"] >= 0.01
    r["pymol"] = r["magenta"] >= 0.004 and r["magenta_width"] >= 0.15 and r["black_around_magenta"] >= 0.4
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("png")
    ap.add_argument("--expect", choices=["desktop", "pymol"], default="pymol",
                    help="pymol (the default) means the desktop and PyMOL's structure")
    a = ap.parse_args()
    r = analyse(a.png)
    ok = r["desktop"] and (a.expect == "desktop" or r["pymol"])
    print(f"desktop_check: {a.expect} {'OK' if ok else 'FAIL'}: {r['size']}, Xfce background {r['background']:.1%}, "
          f"panel {r['panel']:.1%}, magenta {r['magenta']:.2%} over {r['magenta_width']:.0%} of the width, "
          f"black around it {r['black_around_magenta']:.0%}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
