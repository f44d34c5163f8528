"""Axes for the data figures: scales, ticks, a frame with grid and labels, series and a legend."""
import math

import svg


class Scale:
    """Data values onto pixels, linear or log2, from [lo, hi] onto [a, b]."""

    def __init__(self, lo, hi, a, b, log2=False):
        self.log2 = log2
        self.lo, self.hi = (math.log2(lo), math.log2(hi)) if log2 else (lo, hi)
        self.a, self.b = a, b

    def __call__(self, v):
        v = math.log2(v) if self.log2 else v
        return self.a + (v - self.lo) / (self.hi - self.lo) * (self.b - self.a)


def nice_ticks(hi, count=5):
    """Ticks from 0 to at least `hi` in steps of 1, 2 or 5 times a power of ten, about `count` of them."""
    raw = hi / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    n = int(math.ceil(hi / step - 1e-9))
    return [i * step for i in range(n + 1)]


def tick_label(v):
    return ("%d" % v) if float(v).is_integer() else ("%g" % v)


class Axes:
    """A plot area at (x, y), w x h px, with scales `sx`, `sy` built from it."""

    def __init__(self, canvas, x, y, w, h):
        self.svg, self.x, self.y, self.w, self.h = canvas, x, y, w, h

    def xscale(self, lo, hi, log2=False, pad=0):
        self.sx = Scale(lo, hi, self.x + pad, self.x + self.w - pad, log2)
        return self.sx

    def yscale(self, lo, hi):
        self.sy = Scale(lo, hi, self.y + self.h, self.y)
        return self.sy

    def frame(self, xticks, yticks, xlabel="", ylabel="", title="", size=12):
        """Grid, axis lines, ticks [(value, label or None)], labels. Call before the series."""
        s = self.svg
        for v, _ in yticks:
            s.line(self.x, self.sy(v), self.x + self.w, self.sy(v), stroke=svg.LIGHT, width=1)
        for v, _ in xticks:
            s.line(self.sx(v), self.y, self.sx(v), self.y + self.h, stroke=svg.LIGHT, width=1)
        s.line(self.x, self.y + self.h, self.x + self.w, self.y + self.h, stroke=svg.INK, width=1.2)
        s.line(self.x, self.y, self.x, self.y + self.h, stroke=svg.INK, width=1.2)
        for v, label in yticks:
            s.line(self.x - 4, self.sy(v), self.x, self.sy(v), stroke=svg.INK)
            if label is not None:
                s.text(self.x - 7, self.sy(v) + 0.36 * size, label, size=size, anchor="end")
        for v, label in xticks:
            s.line(self.sx(v), self.y + self.h, self.sx(v), self.y + self.h + 4, stroke=svg.INK)
            if label is not None:
                s.text(self.sx(v), self.y + self.h + 6 + size, label, size=size, anchor="middle")
        if xlabel:
            s.text(self.x + self.w / 2, self.y + self.h + 14 + 2 * size, xlabel, size=size + 1, anchor="middle")
        if ylabel:
            widest = max((svg.text_width(label, size) for _, label in yticks if label), default=0)
            yl = self.x - 14 - widest
            s.text(yl, self.y + self.h / 2, ylabel, size=size + 1, anchor="middle", rotate=-90)
        if title:
            s.text(self.x + self.w / 2, self.y - 10, title, size=size + 1, anchor="middle", bold=True)

    def series(self, points, color, dash=None, marker=None, width=2.2, msize=8):
        pixels = [(self.sx(a), self.sy(b)) for a, b in points]
        if len(pixels) > 1:
            self.svg.polyline(pixels, stroke=color, width=width, dash=dash)
        if marker:
            for px, py in pixels:
                self.svg.marker(marker, px, py, msize, color)


def legend(canvas, x, y, entries, columns=1, column_width=220, size=12, row=20):
    """Entries (label, color, dash, marker) in rows from (x, y), the first row's middle at y."""
    for i, (label, color, dash, marker) in enumerate(entries):
        cx = x + (i % columns) * column_width
        cy = y + (i // columns) * row
        if dash is not False:
            canvas.line(cx, cy, cx + 30, cy, stroke=color, width=2.2, dash=dash)
        if marker:
            canvas.marker(marker, cx + 15, cy, 8 if marker != "star" else 11, color)
        canvas.text(cx + 38, cy + 0.36 * size, label, size=size)
