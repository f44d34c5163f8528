"""The committed excerpt of a KOLO_TIMELINE trace, one ResNet-18 step (benchmarks/results/
timeline_resnet18_step.json, written by benchmarks/timeline_overlap.py --excerpt), read through
timeline_overlap.py's own functions so that the figures and its console report agree."""
from sources import RESULTS, timeline_overlap

TRACE = RESULTS / "timeline_resnet18_step.json"
PREFIX = "grad."


def load():
    """(the trace's events, {tensor: its events of the step}, the report's summary in ms)."""
    tool = timeline_overlap()
    trace = tool.read_trace(str(TRACE))
    events = tool.step_events(trace, PREFIX)
    return trace, events, tool.summary(tool.last_step(trace, PREFIX))


def track_names(trace):
    """{pid: track name}, as the viewers label tracks."""
    return {e["pid"]: e["args"]["name"] for e in trace if e.get("ph") == "M" and e["name"] == "process_name"}
