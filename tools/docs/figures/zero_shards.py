"""ZeRO's shards in kolo.torch's DistributedOptimizer(zero_stage=...), as docs/sharded-optimizer.md's
table says: what each of 4 ranks holds of one bucket after backward, and what travels, per stage."""
import svg

NAME = "zero-shards"
RANKS = 4
KINDS = [("parameters", svg.GREY), ("gradients", svg.ORANGE), ("optimizer state", svg.BLUE)]
STAGES = [  # (title, what travels, {kind: whole or shard})
    ("zero_stage=0", ["allreduce of the gradients", "(Horovod's; the default)"],
     {"parameters": True, "gradients": True, "optimizer state": True}),
    ("zero_stage=1", ["allreduce of the gradients;", "allgather of the parameters"],
     {"parameters": True, "gradients": True, "optimizer state": False}),
    ("zero_stage=2", ["reduce-scatter of the gradients;", "allgather of the parameters"],
     {"parameters": True, "gradients": False, "optimizer state": False}),
]


def bar(canvas, x, y, w, h, color, whole, rank):
    """A bucket's elements as RANKS equal shards: all of them held, or only this rank's."""
    part = w / RANKS
    for i in range(RANKS):
        held = whole or i == rank
        canvas.rect(x + i * part, y, part, h, fill=color if held else "#FFFFFF", stroke=svg.INK if held else svg.LIGHT,
                    width=0.8, dash=None if held else (2, 2))


def draw():
    canvas = svg.Svg(780, 548, "What each rank holds of one bucket at ZeRO stages 0, 1 and 2")
    canvas.text(390, 26, "Sharded optimizer (ZeRO): what each of 4 ranks holds of one bucket", size=16,
                anchor="middle", bold=True)
    canvas.text(390, 46, "a bucket's elements are cut into 4 equal shards; shard i is rank i's", size=12,
                anchor="middle", fill=svg.GREY)
    left, col, top, row = 230, 134, 78, 122
    for r in range(RANKS):
        canvas.text(left + r * col + col / 2, top, "rank %d" % r, size=13, anchor="middle", bold=True)
    for s, (title, travels, whole) in enumerate(STAGES):
        y = top + 16 + s * row
        canvas.rect(12, y, 756, row - 12, fill=svg.PALE if s % 2 == 0 else "#FFFFFF", stroke=svg.LIGHT, rx=6)
        canvas.text(24, y + 26, title, size=14, bold=True, mono=True)
        canvas.text(24, y + 48, "what travels:", size=11, fill=svg.GREY)
        for j, line in enumerate(travels):
            canvas.text(24, y + 66 + 16 * j, line, size=12)
        for r in range(RANKS):
            x = left + r * col + 8
            for k, (kind, color) in enumerate(KINDS):
                by = y + 16 + k * 30
                canvas.text(x, by + 10, kind, size=10, fill=svg.GREY)
                bar(canvas, x, by + 14, col - 24, 11, color, whole[kind], r)
    y = top + 16 + 3 * row + 8
    for j, line in enumerate(["At stages 1 and 2, step() runs the wrapped optimizer on this rank's shard of every "
                              "bucket only,",
                              "then allgathers the updated shards into every rank's parameters (the buckets' own "
                              "buffers).",
                              "Stage 2 frees each gradient once reduce-scattered: a rank keeps 1/N, plus one packing "
                              "buffer."]):
        canvas.text(24, y + 18 * j, line, size=12)
    for k, (kind, color) in enumerate(KINDS):
        canvas.rect(24 + k * 26, y + 56, 22, 12, fill=color, stroke=svg.INK, width=0.8)
    canvas.text(108, y + 66, "held by the rank", size=12)
    canvas.rect(260, y + 56, 22, 12, fill="#FFFFFF", stroke=svg.LIGHT, dash=(2, 2))
    canvas.text(290, y + 66, "another rank's shard, not held", size=12)
    return canvas.render()
