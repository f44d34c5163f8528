"""Overlap: one ResNet-18 step, when backward produced each gradient and when it was reduced, from the
committed trace excerpt (what benchmarks/timeline_overlap.py --png draws, without matplotlib)."""
import plot
import step_trace
import svg

NAME = "resnet18-overlap"
GROUPS = ["fc", "layer4", "layer3", "layer2", "layer1"]  # ResNet-18's blocks, in backward's order
ROW = 7.0
MIN_BAR = 2.0  # px: the shortest allreduces would be narrower than a pixel


def group_of(tensor):
    part = tensor[len(step_trace.PREFIX):].split(".")[0]
    return part if part in GROUPS else "stem"


def draw():
    trace, events, (start, backward_end, end, total, overlapped) = step_trace.load()
    ms = lambda ts: ts / 1e3 - start  # noqa: E731  (trace microseconds to ms since the first gradient)
    order = sorted(events, key=lambda n: (min(e["ts"] for e in events[n] if e["name"] == "NEGOTIATE"), n))

    top, left, width = 92, 150, 590
    height = ROW * len(order)
    canvas = svg.Svg(780, int(top + height + 150), "One ResNet-18 step: when each gradient was ready and reduced")
    canvas.text(390, 26, "One ResNet-18 step on rank 0: %.0f%% of the allreduce time overlapped backward"
                % (100.0 * overlapped / total), size=16, anchor="middle", bold=True)
    canvas.text(390, 46, "%d gradients over %.0f ms of backward; communication ended %.0f ms after the last one"
                % (len(order), backward_end - start, end - backward_end), size=12, anchor="middle", fill=svg.GREY)
    ax = plot.Axes(canvas, left, top, width, height)
    xticks = plot.nice_ticks(end - start, 6)
    ax.xscale(0, xticks[-1])
    ax.yscale(0, len(order))
    ax.frame([(v, plot.tick_label(v)) for v in xticks], [], xlabel="ms since the step's first gradient")

    # Rows grouped by ResNet-18's blocks, named at the left.
    rows = {name: i for i, name in enumerate(order)}
    for group in GROUPS + ["stem"]:
        members = [rows[n] for n in order if group_of(n) == group]
        if not members:
            continue
        y0, y1 = top + ROW * min(members) + 1, top + ROW * (max(members) + 1) - 1
        canvas.line(left - 10, y0, left - 10, y1, stroke=svg.GREY, width=1.5)
        canvas.text(left - 16, (y0 + y1) / 2 + 4.5, "%s (%d)" % (group, len(members)), size=12, anchor="end")
    canvas.text(left - 16, top - 14, "gradients", size=12, anchor="end", bold=True)

    for name in order:
        y = top + ROW * rows[name] + ROW / 2
        ready = min(e["ts"] for e in events[name] if e["name"] == "NEGOTIATE")
        for e in events[name]:
            if e["name"] == "NEGOTIATE":
                canvas.line(ax.sx(ms(e["ts"])), y, ax.sx(ms(e["ts"] + e["dur"])), y, stroke=svg.SKY, width=1.2)
        for e in events[name]:
            if e["name"] == "COLLECTIVE":
                a, b = ax.sx(ms(e["ts"])), ax.sx(ms(e["ts"] + e["dur"]))
                canvas.rect(a, y - ROW / 2 + 0.6, max(b - a, MIN_BAR), ROW - 1.2, fill=svg.BLUE)
            elif e["ph"] == "i":
                canvas.marker("diamond", ax.sx(ms(e["ts"])), y, 6, svg.VERMILION)
        canvas.circle(ax.sx(ms(ready)), y, 2, fill=svg.BLACK)

    x_end = ax.sx(backward_end - start)
    canvas.line(x_end, top - 6, x_end, top + height, stroke=svg.VERMILION, width=1.4, dash=(5, 3))
    canvas.text(x_end - 4, top - 10, "backward ends", size=12, anchor="end", fill=svg.VERMILION)

    y = top + height + 66
    canvas.circle(left + 15, y, 3, fill=svg.BLACK)
    canvas.text(left + 38, y + 4.3, "backward produced it (its hook submitted it)", size=12)
    canvas.line(left, y + 22, left + 30, y + 22, stroke=svg.SKY, width=2)
    canvas.text(left + 38, y + 26.3, "NEGOTIATE: waiting until the other rank has it too", size=12)
    canvas.rect(left + 4, y + 39, 22, 6, fill=svg.BLUE)
    canvas.text(left + 38, y + 48.3, "allreduce (COLLECTIVE; at least %g px wide)" % MIN_BAR, size=12)
    canvas.marker("diamond", left + 15, y + 64, 8, svg.VERMILION)
    canvas.text(left + 38, y + 68.3, "reduced riding on the negotiation (a small tensor)", size=12)
    return canvas.render()
