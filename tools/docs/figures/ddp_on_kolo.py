"""One DDP gradient bucket on the kolo backend, as docs/frameworks/pytorch.md's "As a torch.distributed backend"
and docs/architecture.md's "The torch.distributed backend" describe it and bindings/python/kolo/torch/backend/
runs it: the unchanged script on the left, kolo's backend in Python in the middle (_process_group.py,
_reductions.py, _names.py, _issue.py, _work.py), kolo's engine on the right, time downwards; and, below, what a
lost rank does."""
import diagram
import svg

NAME = "ddp-on-kolo"
ENGINE = "#EAF4FB"


def draw():
    canvas = svg.Svg(780, 814, "The path of one DDP gradient bucket on the kolo backend, and what a lost rank does")
    canvas.text(390, 26, "One DDP bucket on the kolo backend (CPU tensors)", size=16, anchor="middle", bold=True)
    canvas.text(390, 46, "dist.init_process_group(\"kolo\"): torch's all_reduce on kolo's engine", size=12,
                anchor="middle", fill=svg.GREY)
    lx, mx, rx, w = 20, 277, 534, 226
    lanes = ((lx, "your script, unchanged", "DistributedDataParallel(model)"),
             (mx, "kolo's backend (Python)", "nothing compiled against torch"),
             (rx, "kolo's engine", "its own thread, one a process"))
    for x, title, subtitle in lanes:
        canvas.rect(x - 8, 62, w + 16, 632, fill="none", stroke=svg.LIGHT, width=1.2, rx=8, dash=(4, 3))
        canvas.text(x + w / 2, 82, title, size=13, anchor="middle", bold=True, fill=svg.GREY)
        canvas.text(x + w / 2, 99, subtitle, size=11, anchor="middle", fill=svg.GREY, mono=x == lx)

    bucket = diagram.box(canvas, lx, 114, w, 52, ["1. loss.backward()", "fills one of DDP's buckets"])
    call = diagram.box(canvas, lx, 188, w, 80, ["2. DDP's reducer", "all_reduce(bucket), async:",
                                                "torch's dispatch to a", "Python ProcessGroup"])
    goes_on = diagram.box(canvas, lx, 380, w, 52, ["backward goes on", "the next buckets, the same path"],
                          fill="#FFFFFF", dash=(4, 3))
    copy = diagram.box(canvas, lx, 548, w, 80, ["10. at backward's end", "DDP's reducer waits on the",
                                                "futures, copies the averaged", "bucket into the gradients"])
    step = diagram.box(canvas, lx, 648, w, 32, ["11. optimizer.step()"])

    name = diagram.box(canvas, mx, 188, w, 80, ["3. a name for the op", "its place in the group's ops:",
                                                "torch group 0 slot 17", "names recur, as a loop's ops do"],
                       fill="#FFFFFF", mono=(2,))
    submit = diagram.box(canvas, mx, 288, w, 62, ["4. submitted to kolo", "allreduce_async_ on the bucket,",
                                                  "in place (_reductions.py)"], fill="#FFFFFF")
    work = diagram.box(canvas, mx, 370, w, 72, ["5. a Work back at once", "KoloWork (_work.py): DDP's",
                                                "comm hook chains on its future"], fill="#FFFFFF")
    done = diagram.box(canvas, mx, 528, w, 62, ["9. the op ends", "kolo.torch's completion thread",
                                                "completes the Work's future"], fill="#FFFFFF")

    agree = diagram.box(canvas, rx, 288, w, 80, ["6. negotiation", "is the name ready on every rank?",
                                                 "cached (a loop's): a bit per rank;",
                                                 "new: gathered to rank 0"], fill=ENGINE)
    fuse = diagram.box(canvas, rx, 390, w, 52, ["7. fusion", "buckets ready together, one op"], fill=ENGINE)
    reduce = diagram.box(canvas, rx, 464, w, 62, ["8. allreduce", "inside a host: its shared memory",
                                                  "across hosts: hierarchical"], fill=ENGINE)

    canvas.arrow(bucket.cx, bucket.bottom, call.cx, call.top)
    canvas.arrow(call.right, call.cy, name.left, name.cy, stroke=svg.BLUE, width=2)
    canvas.arrow(name.cx, name.bottom, submit.cx, submit.top)
    canvas.arrow(submit.right, submit.cy, agree.left, submit.cy, stroke=svg.BLUE, width=2)
    canvas.arrow(submit.cx, submit.bottom, work.cx, work.top)
    canvas.arrow(work.left, goes_on.cy, goes_on.right, goes_on.cy, stroke=svg.BLUE, width=2)
    canvas.arrow(goes_on.cx, goes_on.bottom, copy.cx, copy.top, dash=(5, 4))
    diagram.label(canvas, goes_on.cx, 490, "(other buckets reduce meanwhile)", size=11, fill=svg.GREY)
    canvas.arrow(agree.cx, agree.bottom, fuse.cx, fuse.top)
    canvas.arrow(fuse.cx, fuse.bottom, reduce.cx, reduce.top)
    canvas.arrow(reduce.left, reduce.bottom - 10, done.right, done.top + 14, stroke=svg.BLUE, width=2)
    canvas.arrow(done.left, done.bottom - 12, copy.right, copy.top + 14, stroke=svg.BLUE, width=2)
    canvas.arrow(copy.cx, copy.bottom, step.cx, step.top)

    canvas.text(390, 712, "A GPU bucket goes to NCCL: its Work is finished once kolo has launched the op, the "
                "caller's stream waiting for it.", size=11, anchor="middle", fill=svg.GREY)
    diagram.box(canvas, lx, 728, 740, 70, [
        "A lost or frozen rank",
        "kolo's peer watch names it on every survivor within KOLO_PEER_TIMEOUT_SECONDS; every pending Work",
        "fails with that error, and DDP's backward raises, naming the rank. With the DDP model in a",
        "kolo.torch.elastic.TorchState under kolorun --in-place, the survivors go on instead: see Elastic training."],
        fill="#FFFFFF", stroke=svg.VERMILION, size=12)
    return canvas.render()
