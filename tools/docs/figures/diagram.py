"""Boxes and arrows for the conceptual diagrams, so that every diagram has one look."""
import svg


class Box:
    """A drawn box's edges and centre, for arrows to attach to."""

    def __init__(self, x, y, w, h):
        self.x, self.y, self.w, self.h = x, y, w, h
        self.left, self.right, self.top, self.bottom = x, x + w, y, y + h
        self.cx, self.cy = x + w / 2, y + h / 2


def box(canvas, x, y, w, h, lines, fill=svg.PALE, stroke=svg.INK, size=13, first_bold=True, mono=(), dash=None):
    """A rounded box with `lines` centred in it; the first line bold (its name), `mono` the indexes of
    lines set in a fixed-width font (file and function names)."""
    canvas.rect(x, y, w, h, fill=fill, stroke=stroke, width=1.4, rx=6, dash=dash)
    step = size * 1.3
    first = y + h / 2 - step * (len(lines) - 1) / 2
    for i, line in enumerate(lines):
        small = size if i == 0 else size - 1
        canvas.ctext(x + w / 2, first + i * step, line, size=small, bold=first_bold and i == 0, mono=i in mono)
    return Box(x, y, w, h)


def label(canvas, x, y, text, size=12, anchor="middle", fill=svg.INK, italic=True):
    """A note beside an arrow, on a white patch so that lines behind it do not cross the letters."""
    w = svg.text_width(text, size)
    left = x - w / 2 if anchor == "middle" else (x - w if anchor == "end" else x)
    canvas.rect(left - 3, y - size * 0.62 - 2, w + 6, size * 1.24 + 4, fill="#FFFFFF")
    canvas.ctext(x, y, text, size=size, anchor=anchor, fill=fill, italic=italic)
