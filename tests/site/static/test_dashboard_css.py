"""The dashboard's colours (cronradar/static/cronradar/dashboard.css, and plain.css),
read from their custom properties: the focus outline keeps WCAG 1.4.11's 3:1
non-text contrast on every background a focusable element sits on, in each theme."""
import re
from pathlib import Path

import pytest

CSS = (Path(__file__).resolve().parents[3] / "cronradar" / "static" / "cronradar"
       / "dashboard.css").read_text()
# where focusable things sit: the page, tables' heads and code, the top bar, the boxes
BACKGROUNDS = ("--bg", "--soft", "--header-bg", "--notice-bg", "--alert-bg")


def theme(selector: str) -> dict[str, str]:
    """The custom properties of the rule block ``selector`` opens; the dark ones
    on top of the light ``:root`` (what they do not set, they inherit)."""
    def block(sel):
        body = re.search(re.escape(sel) + r"\s*\{([^}]*)\}", CSS)[1]
        return dict(re.findall(r"(--[\w-]+):\s*([^;]+);", body))
    light = block(":root")
    return light if selector == ":root" else {**light, **block(selector)}


def luminance(colour: str) -> float:
    """WCAG 2's relative luminance of a ``#rgb`` or ``#rrggbb`` colour."""
    digits = colour.strip().lstrip("#")
    digits = "".join(d * 2 for d in digits) if len(digits) == 3 else digits
    channels = [int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_is_wcags():
    assert round(contrast("#fff", "#000"), 2) == 21.0
    assert round(contrast("#f5a623", "#ffffff"), 2) == 2.03  # the old light focus ring


@pytest.mark.parametrize("selector", [
    ":root", ":root[data-theme=dark]", ":root[data-theme=auto], :root:not([data-theme])"])
def test_the_focus_ring_is_3_to_1_on_every_background(selector):
    colours = theme(selector)
    ratios = {bg: round(contrast(colours["--focus"], colours[bg]), 2) for bg in BACKGROUNDS}
    assert all(r >= 3 for r in ratios.values()), (selector, colours["--focus"], ratios)


def test_the_light_focus_ring_is_the_one_chosen():
    assert (theme(":root")["--focus"], theme(":root[data-theme=dark]")["--focus"]) == (
        "#d35400", "#f5a623")


def test_the_plain_pages_focus_ring_is_the_dashboards():
    """plain.css (the acknowledge link's and the 403 page) takes the same rings."""
    plain = (Path(__file__).resolve().parents[3] / "cronradar" / "static" / "cronradar"
             / "plain.css").read_text()
    assert re.findall(r"--focus:\s*([^;]+);", plain) == ["#d35400", "#f5a623"]
