"""A small SVG writer for the documentation's figures: a few primitives, written out as text.

No third-party code and nothing that varies between machines (no dates, ids, dict order or float repr):
every number goes through `num`, so the same inputs give the same bytes anywhere, and `make.py --check`
can compare them.
"""
import math

# Okabe and Ito's palette: told apart with every common colour-vision deficiency.
BLACK = "#000000"
ORANGE = "#E69F00"
SKY = "#56B4E9"
GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILION = "#D55E00"
PURPLE = "#CC79A7"
GREY = "#777777"
LIGHT = "#DDDDDD"
PALE = "#F4F4F4"
INK = "#222222"

FONT = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"


def num(x):
    """A coordinate as text: at most two decimals, no trailing zeros, never '-0'."""
    s = "%.2f" % x
    s = s.rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def text_width(s, size):
    """About how wide `s` is at `size` px in a sans-serif font: an upper estimate (DejaVu is wide), for layout."""
    narrow = sum(1 for c in s if c in "il.,:;'|!()[]1 ")
    wide = sum(1 for c in s if c in "mwMW%")
    return size * (0.62 * (len(s) - narrow - wide) + 0.34 * narrow + 0.9 * wide)


def _style(stroke=None, width=None, dash=None, fill=None, opacity=None):
    attrs = []
    if fill is not None:
        attrs.append('fill="%s"' % fill)
    if stroke is not None:
        attrs.append('stroke="%s"' % stroke)
    if width is not None:
        attrs.append('stroke-width="%s"' % num(width))
    if dash:
        attrs.append('stroke-dasharray="%s"' % " ".join(num(d) for d in dash))
    if opacity is not None:
        attrs.append('opacity="%s"' % num(opacity))
    return " ".join(attrs)


class Svg:
    """One figure: a white canvas of `width` x `height` px, drawn in the order of the calls."""

    def __init__(self, width, height, title):
        self.width, self.height, self.title = width, height, title
        self.items = []
        self.rect(0, 0, width, height, fill="#FFFFFF")  # a page in dark mode must not show through

    def rect(self, x, y, w, h, fill="none", stroke=None, width=None, rx=0, dash=None, opacity=None):
        rounded = ' rx="%s"' % num(rx) if rx else ""
        self.items.append('<rect x="%s" y="%s" width="%s" height="%s"%s %s/>' % (
            num(x), num(y), num(w), num(h), rounded, _style(stroke, width, dash, fill, opacity)))

    def line(self, x1, y1, x2, y2, stroke=INK, width=1, dash=None):
        self.items.append('<line x1="%s" y1="%s" x2="%s" y2="%s" %s/>' % (
            num(x1), num(y1), num(x2), num(y2), _style(stroke, width, dash)))

    def polyline(self, points, stroke=INK, width=2, dash=None):
        pts = " ".join("%s,%s" % (num(x), num(y)) for x, y in points)
        self.items.append('<polyline points="%s" %s stroke-linejoin="round"/>' % (
            pts, _style(stroke, width, dash, "none")))

    def polygon(self, points, fill=INK, stroke=None, width=None):
        pts = " ".join("%s,%s" % (num(x), num(y)) for x, y in points)
        self.items.append('<polygon points="%s" %s/>' % (pts, _style(stroke, width, None, fill)))

    def circle(self, cx, cy, r, fill=INK, stroke=None, width=None):
        self.items.append('<circle cx="%s" cy="%s" r="%s" %s/>' % (num(cx), num(cy), num(r),
                                                                    _style(stroke, width, None, fill)))

    def path(self, d, stroke=INK, width=1.5, fill="none", dash=None):
        """`d` as a list of (command, numbers...) tuples, so that its numbers are formatted too."""
        text = " ".join(c + " ".join(num(v) for v in vs) for c, *vs in d)
        self.items.append('<path d="%s" %s/>' % (text, _style(stroke, width, dash, fill)))

    def text(self, x, y, s, size=13, anchor="start", fill=INK, bold=False, italic=False, rotate=0, mono=False):
        """Text whose baseline is at y; `rotate` in degrees about (x, y)."""
        attrs = ['x="%s"' % num(x), 'y="%s"' % num(y), 'font-size="%s"' % num(size)]
        if anchor != "start":
            attrs.append('text-anchor="%s"' % anchor)
        if fill != INK:
            attrs.append('fill="%s"' % fill)
        if bold:
            attrs.append('font-weight="bold"')
        if italic:
            attrs.append('font-style="italic"')
        if mono:
            attrs.append('font-family="DejaVu Sans Mono, Menlo, Consolas, monospace"')
        if rotate:
            attrs.append('transform="rotate(%s %s %s)"' % (num(rotate), num(x), num(y)))
        self.items.append("<text %s>%s</text>" % (" ".join(attrs), esc(s)))

    def ctext(self, x, y, s, size=13, **kw):
        """Text centred on (x, y), vertically too (by the font's usual proportions, not dominant-baseline,
        which not every renderer honours)."""
        self.text(x, y + 0.36 * size, s, size=size, anchor=kw.pop("anchor", "middle"), **kw)

    def arrow(self, x1, y1, x2, y2, stroke=INK, width=1.6, head=9, dash=None):
        """A line from (x1, y1) whose filled head ends at (x2, y2)."""
        length = math.hypot(x2 - x1, y2 - y1)
        if length == 0:
            return
        ux, uy = (x2 - x1) / length, (y2 - y1) / length
        bx, by = x2 - ux * head, y2 - uy * head  # the head's base, where the line stops
        self.line(x1, y1, bx, by, stroke, width, dash)
        half = head * 0.45
        self.polygon([(x2, y2), (bx - uy * half, by + ux * half), (bx + uy * half, by - ux * half)], fill=stroke)

    def marker(self, kind, x, y, size, color):
        """A plot marker centred on (x, y): circle, square, triangle, diamond or star."""
        r = size / 2
        if kind == "circle":
            self.circle(x, y, r, fill=color)
        elif kind == "square":
            self.rect(x - r * 0.9, y - r * 0.9, 1.8 * r, 1.8 * r, fill=color)
        elif kind == "triangle":
            self.polygon([(x, y - r * 1.15), (x + r, y + r * 0.7), (x - r, y + r * 0.7)], fill=color)
        elif kind == "diamond":
            self.polygon([(x, y - r * 1.2), (x + r, y), (x, y + r * 1.2), (x - r, y)], fill=color)
        elif kind == "star":
            pts = []
            for i in range(10):
                a = math.pi / 2 + i * math.pi / 5
                rr = r * 1.3 if i % 2 == 0 else r * 0.55
                pts.append((x + rr * math.cos(a), y - rr * math.sin(a)))
            self.polygon(pts, fill=color)
        else:
            raise ValueError("no marker %r" % kind)

    def render(self):
        head = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
                'font-family="%s" role="img">' % (self.width, self.height, self.width, self.height, FONT))
        return "\n".join([head, "<title>%s</title>" % esc(self.title)] + self.items + ["</svg>"]) + "\n"
