"""Hierarchical allreduce on 2 hosts x 2 ranks, as kolo runs it (src/comm/host/hierarchical_reducer.h,
and src/comm/device/device_allreduce.cc for GPU tensors): reduce-scatter inside each host, each block
across hosts among the ranks of one local rank, allgather inside each host."""
import svg

NAME = "hierarchical-allreduce"
OWN, HOST, ALL, GONE = "own", "host", "all", "gone"
STYLE = {OWN: (svg.PALE, svg.INK), HOST: (svg.SKY, svg.INK), ALL: (svg.BLUE, "#FFFFFF"), GONE: ("#FFFFFF", svg.GREY)}
# What each rank holds of blocks 0 and 1 after each stage: (kind, text).
STAGES = [
    ("Start", "each rank its gradients", {r: [(OWN, "g%d" % r), (OWN, "g%d" % r)] for r in range(4)}),
    ("1. Reduce-scatter", "inside each host", {
        0: [(HOST, "0+1"), (GONE, "")], 1: [(GONE, ""), (HOST, "0+1")],
        2: [(HOST, "2+3"), (GONE, "")], 3: [(GONE, ""), (HOST, "2+3")]}),
    ("2. Across hosts", "block i between local ranks i", {
        0: [(ALL, "sum"), (GONE, "")], 1: [(GONE, ""), (ALL, "sum")],
        2: [(ALL, "sum"), (GONE, "")], 3: [(GONE, ""), (ALL, "sum")]}),
    ("3. Allgather", "inside each host", {r: [(ALL, "sum"), (ALL, "sum")] for r in range(4)}),
]


def draw():
    canvas = svg.Svg(780, 518, "Hierarchical allreduce on 2 hosts of 2 ranks each")
    canvas.text(390, 26, "Hierarchical allreduce, 2 hosts x 2 ranks", size=16, anchor="middle", bold=True)
    canvas.text(390, 46, "each rank's buffer cut into as many blocks as a host has ranks; "
                "block i is local rank i's to carry", size=12, anchor="middle", fill=svg.GREY)
    cell, col = 52, 190
    for s, (title, subtitle, held) in enumerate(STAGES):
        x = 14 + s * col
        canvas.text(x + 86, 84, title, size=13, anchor="middle", bold=True)
        canvas.text(x + 86, 102, subtitle, size=11, anchor="middle", fill=svg.GREY)
        for h, host in enumerate(("host A", "host B")):
            y = 120 + h * 170
            canvas.rect(x, y, 172, 108, fill="#FFFFFF", stroke=svg.INK, width=1.2, rx=6)
            canvas.text(x + 8, y + 18, host, size=12, bold=True)
            for b in range(2):
                canvas.text(x + 84 + b * (cell + 4), y + 18, "block %d" % b, size=10, anchor="middle", fill=svg.GREY)
            for i in range(2):
                rank = 2 * h + i
                ry = y + 28 + i * 38
                canvas.text(x + 8, ry + 21, "rank %d" % rank, size=11)
                for b, (kind, text) in enumerate(held[rank]):
                    fill, ink = STYLE[kind]
                    cx = x + 58 + b * (cell + 4)
                    canvas.rect(cx, ry + 4, cell, 26, fill=fill, stroke=svg.GREY if kind == GONE else svg.INK,
                                width=1, dash=(3, 2) if kind == GONE else None)
                    canvas.ctext(cx + cell / 2, ry + 17, text, size=11, fill=ink, mono=True)
        if s == 2:
            # The crossing: block 0 between the hosts' local ranks 0, block 1 between their local ranks 1.
            for b in range(2):
                bx = x + 84 + b * (cell + 4)
                canvas.arrow(bx, 259, bx, 231, stroke=svg.VERMILION, width=2.2)
                canvas.arrow(bx, 259, bx, 287, stroke=svg.VERMILION, width=2.2)
            canvas.text(x + 8, 263, "the link", size=11, fill=svg.VERMILION, italic=True)
        if s < 3:
            canvas.arrow(x + 174, 259, x + col - 2, 259, stroke=svg.GREY, width=1.6)

    for i, (kind, text) in enumerate(((OWN, "a rank's own gradient (g0..g3)"), (HOST, "summed over its host's ranks"),
                                      (ALL, "summed over every rank"), (GONE, "not this rank's block to carry"))):
        fill, _ = STYLE[kind]
        x, y = 120 + (i % 2) * 300, 420 + (i // 2) * 24
        canvas.rect(x, y - 9, 22, 18, fill=fill, stroke=svg.GREY if kind == GONE else svg.INK,
                    dash=(3, 2) if kind == GONE else None)
        canvas.text(x + 30, y + 4.5, text, size=12)
    for j, line in enumerate(["Each byte crosses between hosts once per host, not once per rank. Inside a host: "
                              "its shared memory",
                              "or kolo's ring (CPU), NCCL (GPU). Across: a pairwise exchange on 2 hosts, kolo's ring "
                              "on more."]):
        canvas.text(390, 484 + 18 * j, line, size=12, anchor="middle")
    return canvas.render()
