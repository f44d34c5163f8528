"""How much of a training step's communication overlaps backward, read from a KOLO_TIMELINE trace.

    kolorun -np 2 --timeline-filename /tmp/timeline.json python3 benchmarks/pytorch_synthetic.py
    python3 benchmarks/timeline_overlap.py /tmp/timeline.json --png overlap.png

A gradient's NEGOTIATE span starts when backward has produced it (DistributedOptimizer's hook submits
it then), so the last such start of a step is where backward ends. The tool takes the last complete
step of the tensors whose names start with --prefix, and reports how much of the step's collective
time lies before that point; with --png it draws the step: one row per gradient, a dot where
backward produced it and a bar while it was reduced. --excerpt writes that step's events alone, a trace
small enough to commit (benchmarks/results/timeline_resnet18_step.json, from which
tools/docs/figures draws the documentation's overlap and timeline figures).
"""
import argparse
import json
import sys


def merged_length(spans):
    total, current = 0.0, None
    for a, b in sorted(spans):
        if current and a <= current[1]:
            current = (current[0], max(current[1], b))
        else:
            if current:
                total += current[1] - current[0]
            current = (a, b)
    return total + (current[1] - current[0] if current else 0.0)


def clip(spans, end):
    return [(a, min(b, end)) for a, b in spans if a < end]


def read_trace(path):
    with open(path) as f:
        text = f.read().rstrip()
    return json.loads(text if text.endswith("]") else text.rstrip(",") + "]")  # a crashed job's trace lacks "]"


def step_events(trace, prefix):
    """{tensor name: its events of the last step}: every gradient is reduced once a step, so the last step
    is each tensor's last NEGOTIATE and the events that follow it."""
    names = {e["pid"]: e["args"]["name"] for e in trace if e.get("ph") == "M" and e["name"] == "process_name"}
    rows = {}
    for e in trace:
        if e.get("ph") in ("X", "i") and names.get(e["pid"], "").startswith(prefix):
            rows.setdefault(names[e["pid"]], []).append(e)
    if not any(e["ph"] == "X" for events in rows.values() for e in events):
        sys.exit("no spans of tensors named %s* in the trace" % prefix)
    step = {}
    for name, events in rows.items():
        negotiates = [e for e in events if e["ph"] == "X" and e["name"] == "NEGOTIATE"]
        if negotiates:
            last = max(e["ts"] for e in negotiates)
            step[name] = [e for e in events if e["ts"] >= last]
    return step


def last_step(trace, prefix):
    """{tensor name: (when backward produced it, [(start, end) of its collectives])}, in ms."""
    step = {}
    for name, events in step_events(trace, prefix).items():
        ready = min(e["ts"] for e in events if e["name"] == "NEGOTIATE")
        collectives = [e for e in events if e["name"] == "COLLECTIVE"]
        step[name] = (ready / 1e3, [(c["ts"] / 1e3, (c["ts"] + c["dur"]) / 1e3) for c in collectives])
    return step


def summary(step):
    """(first gradient, backward's end, communication's end, collective time, of it before backward's end), ms."""
    ready = [t for t, _ in step.values()]
    start, backward_end = min(ready), max(ready)
    spans = [s for _, ss in step.values() for s in ss]
    end = max(b for _, b in spans)
    return start, backward_end, end, merged_length(spans), merged_length(clip(spans, backward_end))


def write_excerpt(trace, prefix, path):
    """The last step's events of the tensors named prefix*, with their tracks' names and order: a trace
    that Perfetto and chrome://tracing open, one event a line as kolo writes them."""
    step = step_events(trace, prefix)
    pids = {events[0]["pid"] for events in step.values()}
    keep = [e for e in trace if e.get("ph") == "M" and e["pid"] in pids]
    keep += sorted((e for events in step.values() for e in events), key=lambda e: (e["ts"], e["pid"]))
    with open(path, "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(e, separators=(",", ":")) for e in keep) + "\n]\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("timeline")
    parser.add_argument("--prefix", default="grad.", help="names of the gradients' allreduces")
    parser.add_argument("--png", default="")
    parser.add_argument("--excerpt", default="", help="write the last step's events of those tensors to this file")
    args = parser.parse_args()
    trace = read_trace(args.timeline)
    step = last_step(trace, args.prefix)
    start, backward_end, end, total, overlapped = summary(step)
    if args.excerpt:
        write_excerpt(trace, args.prefix, args.excerpt)
    print("gradients: %d; backward produced them over %.1f ms; communication ended %.1f ms after the last one"
          % (len(step), backward_end - start, end - backward_end))
    print("collective time: %.1f ms, of which %.1f ms (%.0f%%) overlapped backward"
          % (total, overlapped, 100.0 * overlapped / total if total else 0.0))
    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        order = sorted(step, key=lambda n: step[n][0])
        fig, ax = plt.subplots(figsize=(9, max(3, 0.09 * len(order) + 1.5)))
        for i, name in enumerate(order):
            t, ss = step[name]
            ax.plot([t - start], [i], "k.", markersize=3)
            for a, b in ss:
                ax.plot([a - start, b - start], [i, i], color="tab:blue", linewidth=2.5, solid_capstyle="butt")
        ax.axvline(backward_end - start, color="tab:red", linestyle="--", linewidth=1)
        ax.text(backward_end - start, len(order), " backward ends", color="tab:red", va="bottom", fontsize=8)
        ax.set_xlabel("ms since the step's first gradient")
        ax.set_ylabel("gradients, in the order backward produced them")
        ax.set_title("One step: gradient produced (dot) and its allreduce (bar); %.0f%% of allreduce time overlapped "
                     "backward" % (100.0 * overlapped / total if total else 0.0), fontsize=9)
        ax.set_yticks([])
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
        print("wrote", args.png)


if __name__ == "__main__":
    main()
