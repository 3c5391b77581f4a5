#!/usr/bin/python3
"""Render the test guest's banner as raw framebuffer images.

Usage: make_banner.py OUT_PREFIX WIDTH HEIGHT
Writes OUT_PREFIX-24.raw (B,G,R) and OUT_PREFIX-32.raw (B,G,R,X) for the guest's /dev/fb0, and
OUT_PREFIX.png as the reference picture. The background colour BG and the six colour bars are
what the end-to-end test looks for in the browser, so keep them in step with tests/viz.
Needs Debian's python3-pil (run with /usr/bin/python3).
"""
import sys

from PIL import Image, ImageDraw, ImageFont

BG = (0, 96, 160)
BARS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (255, 0, 255), (0, 255, 255)]


def main():
    out, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    img = Image.new("RGB", (w, h), BG)
    d = ImageDraw.Draw(img)
    try:
        big = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", 56)
        small = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf", 28)
    except OSError:
        big = small = ImageFont.load_default()
    d.rectangle([40, 200, w - 40, h - 200], fill=(255, 255, 255))
    d.text((80, 260), "SLURM-VGPU VIZ GUEST", font=big, fill=(200, 30, 30))
    d.text((80, 360), "busybox initramfs + Debian kernel", font=small, fill=(0, 0, 0))
    d.text((80, 410), "framebuffer desktop is up", font=small, fill=(0, 0, 0))
    bw = (w - 80) // len(BARS)
    for i, c in enumerate(BARS):
        d.rectangle([40 + i * bw, h - 160, 40 + (i + 1) * bw - 1, h - 60], fill=c)
    r, g, b = img.split()
    x = Image.new("L", (w, h), 0)
    with open(f"{out}-32.raw", "wb") as f:
        f.write(Image.merge("RGBA", (b, g, r, x)).tobytes())
    with open(f"{out}-24.raw", "wb") as f:
        f.write(Image.merge("RGB", (b, g, r)).tobytes())
    img.save(out + ".png")


if __name__ == "__main__":
    main()
