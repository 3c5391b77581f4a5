#!/usr/bin/python3
"""desktop_check's rule on recorded screenshots: it must pass on the desktop with PyMOL's
structure and fail on each way the picture can be wrong."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import desktop_check  # noqa: E402


def fixture(name):
    return desktop_check.analyse(os.path.join(HERE, "fixtures", name))


class DesktopCheck(unittest.TestCase):
    def test_desktop_with_pymols_structure_passes(self):
        r = fixture("desktop-with-pymol.png")
        self.assertTrue(r["desktop"], r)
        self.assertTrue(r["pymol"], r)

    def test_the_same_in_chromium_with_our_page_passes(self):
        r = fixture("chromium-desktop-with-pymol.png")
        self.assertTrue(r["desktop"] and r["pymol"], r)

    def test_desktop_before_pymol_is_up_but_shows_no_structure(self):
        r = fixture("desktop-without-pymol.png")
        self.assertTrue(r["desktop"], r)
        self.assertFalse(r["pymol"], r)

    def test_pymol_open_without_the_structure_fails(self):
        r = fixture("pymol-without-structure.png")
        self.assertTrue(r["desktop"], r)
        self.assertFalse(r["pymol"], r)

    def test_the_test_guests_banner_is_no_desktop(self):
        # It has a magenta colour bar, but no Xfce and no black viewer around it.
        r = fixture("test-guest-banner.png")
        self.assertFalse(r["desktop"], r)
        self.assertFalse(r["pymol"], r)


if __name__ == "__main__":
    unittest.main()
