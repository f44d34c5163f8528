"""A kolo timeline as Perfetto lays one out: a track per tensor (names at the left, in the trace's sort
order), the time ruler at the top, each phase a slice, and the details of one selected slice below, drawn
from the first tracks of the committed trace excerpt. A picture of the viewer, not the viewer: the real
file opens in ui.perfetto.dev or chrome://tracing."""
import plot
import step_trace
import svg

NAME = "timeline-perfetto"
TRACKS = 8
PHASES = [  # the timeline's phases (docs/performance.md), each slice's fill and its label's colour
    ("NEGOTIATE", svg.SKY, svg.INK),
    ("QUEUE", svg.YELLOW, svg.INK),
    ("PACK", svg.GREEN, "#FFFFFF"),
    ("COLLECTIVE", svg.BLUE, "#FFFFFF"),
    ("UNPACK", svg.PURPLE, svg.INK),
]
COLORS = {name: (fill, ink) for name, fill, ink in PHASES}


def draw():
    trace, events, _ = step_trace.load()
    names = step_trace.track_names(trace)
    order = {e["pid"]: e["args"]["sort_index"] for e in trace
             if e.get("ph") == "M" and e["name"] == "process_sort_index"}
    pids = sorted((p for p, name in names.items() if name in events), key=lambda p: (order.get(p, p), p))[:TRACKS]
    origin = min(e["ts"] for evs in events.values() for e in evs)  # the viewers' zero: the trace's first event
    shown = [e for p in pids for e in events[names[p]]]
    ticks = plot.nice_ticks(max(e["ts"] + e.get("dur", 0) - origin for e in shown) / 1e3, 7)

    left, right, ruler, track = 250, 770, 78, 30
    height = ruler + 24 + track * len(pids)
    canvas = svg.Svg(780, height + 190, "A kolo timeline in Perfetto's layout: one track per tensor, a slice per phase")
    canvas.text(390, 24, "A kolo timeline (KOLO_TIMELINE) in Perfetto's layout", size=16, anchor="middle", bold=True)
    canvas.text(390, 44, "rank 0, the first %d tensors of one ResNet-18 step's gradients; drawn by tools/docs/figures"
                % len(pids), size=12, anchor="middle", fill=svg.GREY)
    sx = plot.Scale(0, ticks[-1], left + 8, right - 46)  # room for the last tick's label

    # The ruler: Perfetto's time axis, at the top.
    canvas.rect(10, ruler - 18, right - 10, 26, fill=svg.PALE, stroke=svg.LIGHT)
    canvas.text(20, ruler, "time since the trace's start", size=11, fill=svg.GREY)
    for v in ticks:
        canvas.line(sx(v), ruler - 18, sx(v), height, stroke=svg.LIGHT)
        canvas.text(sx(v) + 3, ruler, "%s ms" % plot.tick_label(v), size=11)

    selected = max((e for e in shown if e["name"] == "COLLECTIVE"), key=lambda e: (e["dur"], -e["ts"]))
    for i, pid in enumerate(pids):
        y = ruler + 16 + i * track
        canvas.rect(10, y, left - 10, track, fill="#FFFFFF" if i % 2 else svg.PALE, stroke=svg.LIGHT)
        canvas.text(20, y + track / 2 + 4.5, names[pid], size=12, mono=True)
        canvas.text(left - 8, y + track / 2 + 4.5, str(pid), size=11, anchor="end", fill=svg.GREY)
        canvas.line(left, y + track, right, y + track, stroke=svg.LIGHT)
        for e in events[names[pid]]:
            x0 = sx((e["ts"] - origin) / 1e3)
            if e["ph"] == "i":
                canvas.marker("diamond", x0, y + track / 2, 9, svg.VERMILION)
                continue
            fill, ink = COLORS[e["name"]]
            w = max(sx((e["ts"] + e["dur"] - origin) / 1e3) - x0, 1.0)  # Perfetto draws a slice at least 1 px wide
            chosen = e is selected
            canvas.rect(x0, y + 5, w, track - 10, fill=fill, stroke=svg.BLACK if chosen else None,
                        width=2 if chosen else None)
            if svg.text_width(e["name"], 10) + 6 < w:
                canvas.ctext(x0 + w / 2, y + track / 2, e["name"], size=10, fill=ink)

    # The details panel of the selected slice, as Perfetto shows it below the tracks.
    y = height + 14
    canvas.rect(10, y, right - 10, 104, fill=svg.PALE, stroke=svg.LIGHT)
    canvas.text(20, y + 20, "Current selection: slice %s (outlined above)" % selected["name"], size=12, bold=True)
    args = selected.get("args", {})
    rows = [("track", names[selected["pid"]]),
            ("start", "%.1f ms" % ((selected["ts"] - origin) / 1e3)),
            ("duration", "%.1f ms" % (selected["dur"] / 1e3)),
            ("args", ", ".join("%s: %s" % (k, args[k]) for k in sorted(args)))]
    for j, (key, value) in enumerate(rows):
        canvas.text(30, y + 42 + j * 18, key, size=12, fill=svg.GREY)
        canvas.text(110, y + 42 + j * 18, value, size=12, mono=True)

    y += 126
    x = 20
    for name, fill, _ in PHASES:
        canvas.rect(x, y - 7, 16, 14, fill=fill)
        canvas.text(x + 22, y + 4.5, name, size=12)
        x += 30 + svg.text_width(name, 12)
    canvas.marker("diamond", x + 8, y, 10, svg.VERMILION)
    canvas.text(x + 20, y + 4.5, "REDUCED_WITH_NEGOTIATION", size=12)
    canvas.text(20, y + 30, "QUEUE, PACK and UNPACK last microseconds here: thinner than a pixel at this scale.",
                size=12, fill=svg.GREY)
    return canvas.render()
