"""Measured scaling: the synthetic ResNet-50 step's images/s and efficiency against ranks, kolo against
one MPI_Allreduce after backward, from benchmarks/results/scaling_measured.json (scaling_report.py's
own series, so that the figure and the report's PNG show the same numbers)."""
import json

import plot
import svg
from sources import RESULTS, scaling_report

NAME = "scaling-measured"
LABELS = {"1": "1 rank", "2": "2 ranks", "4": "4 ranks", "2x2": "2 hosts x 2"}
STYLE = {  # mode: (legend label, colour, dash, marker)
    "kolo, flat": ("kolo, flat", svg.BLUE, None, "circle"),
    "kolo, hierarchical": ("kolo, hierarchical", svg.VERMILION, None, "square"),
    "MPI_Allreduce after backward": ("one MPI_Allreduce after backward", svg.GREY, (6, 4), "triangle"),
}


def draw():
    report = scaling_report()
    measured = json.loads((RESULTS / "scaling_measured.json").read_text())["measured"]
    keys, series = report.measured_series(measured)
    compute_ms = 1e3 * measured["1"][0]["compute_seconds"]

    canvas = svg.Svg(780, 470, "Measured scaling of a synthetic ResNet-50 step: kolo against MPI_Allreduce")
    canvas.text(390, 26, "Synthetic ResNet-50 step (%.0f ms of emulated compute per rank), measured" % compute_ms,
                size=16, anchor="middle", bold=True)
    top = 335
    xticks = [(i, LABELS[k]) for i, k in enumerate(keys)]
    for x, column, title, ylabel in ((92, 1, "Throughput", "images/s, all ranks"),
                                     (482, 2, "Scaling efficiency", "% of 1 rank's step time")):
        ax = plot.Axes(canvas, x, 62, 270, top - 62)
        ax.xscale(0, len(keys) - 1, pad=22)
        if column == 1:
            hi = max(p[1] for s in series.values() for p in s)
            yticks = plot.nice_ticks(hi * 1.05, 5)
        else:
            yticks = [0, 20, 40, 60, 80, 100]
        ax.yscale(0, yticks[-1] if column == 1 else 110)
        ax.frame(xticks, [(v, plot.tick_label(v)) for v in yticks], xlabel="ranks", ylabel=ylabel, title=title)
        for mode in report.MODES:
            _, color, dash, marker = STYLE[mode]
            ax.series([(p[0], p[column]) for p in series[mode]], color, dash, marker)
    plot.legend(canvas, 92, 412, [STYLE[m] for m in report.MODES], columns=3, column_width=215)
    canvas.text(390, 448, "On one host kolo's two modes measured the same: their lines coincide up to 4 ranks.",
                size=12, anchor="middle", fill=svg.GREY)
    return canvas.render()
