"""Projected scaling: scaling_report.py's cost model, fitted to the measurements in
benchmarks/results/scaling_measured.json and carried to 8-1024 GPUs (its fit_model and projection,
imported), flat against hierarchical at each link speed, beside Horovod's published figure at 512."""
import json

import plot
import svg
from sources import RESULTS, scaling_report

NAME = "scaling-projected"
LINK_COLORS = (svg.GREY, svg.VERMILION, svg.BLUE)  # one per link speed, in NET_GBIT's order


def draw():
    report = scaling_report()
    data = json.loads((RESULTS / "scaling_measured.json").read_text())
    compute_s = data["measured"]["1"][0]["compute_seconds"]
    fit = report.fit_model(data["measured"], data["bound"], data["latency"], compute_s)
    gpus, table = report.projection(fit)

    canvas = svg.Svg(780, 470, "Projected scaling efficiency of kolo, flat against hierarchical, 8 to 1024 GPUs")
    canvas.text(390, 24, "Projected from the cost model fitted to the measurements", size=16, anchor="middle",
                bold=True)
    canvas.text(390, 44, "A projection, not a measurement: %d GPUs per host on NVLink, the link per host between "
                "hosts" % report.GPUS_PER_HOST, size=12, anchor="middle", fill=svg.GREY)
    yticks = [(v, plot.tick_label(v)) for v in (0, 20, 40, 60, 80, 100)]
    for i, (name, size, _, horovod) in enumerate(report.MODELS):
        ax = plot.Axes(canvas, 78 + i * 236, 88, 200, 232)
        ax.xscale(gpus[0], gpus[-1], log2=True, pad=8)
        ax.yscale(0, 105)
        # Every other GPU count is labelled: eight labels do not fit a third of the width.
        xticks = [(g, str(g) if j % 2 == 0 else None) for j, g in enumerate(gpus)]
        ax.frame(xticks, yticks if i == 0 else [(v, None) for v, _ in yticks],
                 xlabel="GPUs", ylabel="scaling efficiency (%)" if i == 0 else "",
                 title="%s, %.0f MB" % (name, size / 1e6))
        for gbit, color in zip(report.NET_GBIT, LINK_COLORS):
            for hierarchical, dash in ((False, (6, 4)), (True, None)):
                effs = table[(name, gbit, hierarchical)]
                ax.series([(g, 100 * e) for g, e in zip(gpus, effs)], color, dash, width=2.4 if hierarchical else 2)
        ax.svg.marker("star", ax.sx(512), ax.sy(100 * horovod), 13, svg.BLACK)
    entries = []
    for gbit, color in zip(report.NET_GBIT, LINK_COLORS):
        entries.append(("flat, %d Gb/s" % gbit, color, (6, 4), None))
        entries.append(("hierarchical, %d Gb/s" % gbit, color, None, None))
    plot.legend(canvas, 78, 386, entries[0::2] + entries[1::2], columns=3, column_width=230)
    plot.legend(canvas, 78, 434, [("Horovod's published efficiency at 512 GPUs (25 Gb/s)", svg.BLACK, False,
                                   "star")])
    canvas.text(390, 460, "MB: gradient bytes per step. Lines at 100% hide behind one another.", size=12,
                anchor="middle", fill=svg.GREY)
    return canvas.render()
