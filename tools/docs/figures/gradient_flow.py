"""The data-flow of one gradient through kolo, as docs/architecture.md's "One gradient, from the hook to
MPI and back" traces it in the code: the framework's thread on the left, kolo's background thread on the
right, time downwards, each engine step named by the timeline phase that records it."""
import diagram
import svg

NAME = "gradient-flow"


def draw():
    canvas = svg.Svg(780, 680, "The path of one gradient through kolo, from backward's hook to the optimizer's step")
    canvas.text(390, 26, "One gradient through kolo (kolo.torch, DistributedOptimizer)", size=16, anchor="middle",
                bold=True)
    lx, rx, w = 20, 420, 340
    for x, title in ((lx, "the framework's thread (Python)"), (rx, "kolo's background thread (one a process)")):
        canvas.rect(x - 8, 42, w + 16, 580, fill="none", stroke=svg.LIGHT, width=1.2, rx=8, dash=(4, 3))
        canvas.text(x + w / 2, 62, title, size=13, anchor="middle", bold=True, fill=svg.GREY)

    hook = diagram.box(canvas, lx, 76, w, 62, ["1. backward fills p.grad", "the optimizer's hook runs:",
                                               "_parameters.py register_accumulate_hooks"], mono=(2,))
    submit = diagram.box(canvas, lx, 166, w, 80, ["2. kolo.torch: allreduce_async_", "_allreduce.py → the C ABI's",
                                                  "kolo_allreduce → Engine::submit", "a handle comes back at once"],
                         mono=())
    goes_on = diagram.box(canvas, lx, 292, w, 52, ["backward goes on", "the next gradients take the same path"],
                          fill="#FFFFFF", dash=(4, 3))
    step = diagram.box(canvas, lx, 470, w, 62, ["8. optimizer.step()", "synchronize(): kolo._C.wait on each handle",
                                                "(kolo_wait, in the HandleTable)"])
    update = diagram.box(canvas, lx, 556, w, 52, ["9. the wrapped optimizer's update", "p.grad holds the average"])

    queue = diagram.box(canvas, rx, 76, w, 52, ["3. TensorQueue", "the op waits; kolo's thread wakes"],
                        fill="#EAF4FB")
    negotiate = diagram.box(canvas, rx, 150, w, 80, ["4. negotiation: Controller", "is the name ready on every rank?",
                                                     "cached: one bit in a small allreduce;",
                                                     "new: gathered to rank 0's Coordinator"], fill="#EAF4FB")
    fuse = diagram.box(canvas, rx, 252, w, 62, ["5. fusion: FusionPlanner", "ready tensors of one dtype and op, up to",
                                                "64 MiB, packed into the fusion buffer"], fill="#EAF4FB")
    reduce = diagram.box(canvas, rx, 336, w, 80, ["6. allreduce: Executor, a Collective",
                                                  "CPU: the host's shared memory,",
                                                  "kolo's ring or MPI; hierarchical across hosts",
                                                  "GPU: NCCL on kolo's stream"], fill="#EAF4FB")
    unpack = diagram.box(canvas, rx, 438, w, 62, ["7. copy out of the fusion buffer",
                                                  "into each tensor, then the handle",
                                                  "is marked done (HandleTable)"], fill="#EAF4FB")
    # Each engine step's phase in the timeline (docs/performance.md), a tab on the box's top edge.
    # NEGOTIATE runs from the submission until every rank has submitted; QUEUE is the wait for the group.
    for box_, phase in ((negotiate, "NEGOTIATE, since 2"), (fuse, "QUEUE, PACK"), (reduce, "COLLECTIVE"),
                        (unpack, "UNPACK")):
        tab = svg.text_width(phase, 10) + 10
        canvas.rect(box_.right - 12 - tab, box_.top - 8, tab, 16, fill="#FFFFFF", stroke=svg.BLUE, rx=3)
        canvas.ctext(box_.right - 12 - tab / 2, box_.top, phase, size=10, fill=svg.BLUE, mono=True)

    canvas.arrow(hook.cx, hook.bottom, submit.cx, submit.top)
    canvas.arrow(submit.right, submit.top + 24, queue.left, queue.cy + 6, stroke=svg.BLUE, width=2)
    diagram.label(canvas, 390, 150, "the op", size=11)
    canvas.arrow(submit.cx, submit.bottom, goes_on.cx, goes_on.top)
    canvas.arrow(goes_on.cx, goes_on.bottom, step.cx, step.top, dash=(5, 4))
    diagram.label(canvas, goes_on.cx, 405, "(other gradients reduce meanwhile)", size=11, fill=svg.GREY)
    canvas.arrow(step.cx, step.bottom, update.cx, update.top)
    for a, b in ((queue, negotiate), (negotiate, fuse), (fuse, reduce), (reduce, unpack)):
        canvas.arrow(a.cx, a.bottom, b.cx, b.top)
    canvas.arrow(unpack.left, unpack.cy + 10, step.right, step.top + 16, stroke=svg.BLUE, width=2)
    diagram.label(canvas, 390, 496, "done", size=11)
    canvas.text(390, 646, "A tab names the timeline's phase (KOLO_TIMELINE) that records the step.", size=11,
                anchor="middle", fill=svg.GREY)
    canvas.text(390, 664, "A CPU tensor of at least KOLO_ZERO_COPY_BYTES is reduced where it lies, without steps 5 and 7.",
                size=11, anchor="middle", fill=svg.GREY)
    return canvas.render()
