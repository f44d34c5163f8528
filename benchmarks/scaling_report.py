"""kolo's scaling report: measures, fits a cost model, projects, and writes Markdown and PNG plots.

    /usr/bin/python3 benchmarks/scaling_report.py [--build build] [--out benchmarks/results]
        [--compute-ms 200] [--steps 10] [--bound-rate-mbit 1000] [--bound-settings NAME=VALUE,...] [--replot]

Measured (benchmarks/synthetic_step: ResNet-50's gradients, compute emulated by sleeping so that the
CPUs carry only the traffic): 1, 2 and 4 ranks on this host, and 2 emulated hosts x 2 ranks
(tests/system/cluster/cluster.sh; needs root, else that point is left out and the report says so). Each
run also measures communication alone (no compute), and cluster_allreduce measures the cross-host
allreduce against its bound on links capped at --bound-rate-mbit.

Fitted to those: the share of compute that hides communication, kolo's fixed cost per collective,
and how close to the link's rate a cross-host allreduce gets. Projected with them: 8 to 1024 GPUs,
8 per host over NVLink, 100 and 400 Gb/s per host between hosts, flat against hierarchical.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "tests" / "system" / "cluster" / "cluster.sh"
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
TWO_PER_HOST = '"$(echo $CLUSTER_HOSTS | sed "s/,/:2,/g"):2"'
MODES = ("kolo, flat", "kolo, hierarchical", "MPI_Allreduce after backward")

# The stated cluster of the projection. Link figures are the hardware's, not fitted.
GPUS_PER_HOST = 8
NVLINK_BYTES_PER_S = 150e9      # per GPU, ring bandwidth inside a host (NVLink, V100/A100 class)
NVLINK_LATENCY_S = 3e-6         # per ring step inside a host
NET_LATENCY_S = 10e-6           # per ring step between hosts (RDMA class, with the software above it)
NET_GBIT = (25, 100, 400)       # per host, between hosts (25: the network of Horovod's published figures)
FUSION_BYTES = 67108864  # kolo's default KOLO_FUSION_THRESHOLD_BYTES (64 MiB; ctest settings_drift compares)
# Models beside Horovod's published scaling (Sergeev & Del Balso 2018, 25 Gb/s RoCE, Pascal GPUs):
# efficiency at 512 GPUs. Gradient bytes are fp32 parameters; per-GPU compute is an assumption
# (batch 64, fp32, V100 class), stated in the report.
MODELS = [
    # name, gradient bytes, assumed images/s per GPU (compute alone), Horovod's efficiency at 512
    ("ResNet-101", 44.5e6 * 4, 220.0, 0.90),
    ("Inception V3", 27.2e6 * 4, 250.0, 0.90),
    ("VGG-16", 138.4e6 * 4, 230.0, 0.68),
]
BATCH = 64


def run(command, timeout=900, env=MPI_ENV):
    job = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=timeout, env=env)
    return job


def synthetic(build, ranks, compute_ms, steps, cluster):
    """One synthetic_step run; returns its JSON, or None where the cluster cannot be made."""
    with tempfile.NamedTemporaryFile(suffix=".json", dir="/var/tmp") as out:
        binary = build / "benchmarks" / "synthetic_step"
        args = "--compute-ms %g --steps %d --json %s" % (compute_ms, steps, out.name)
        if cluster:
            command = "%s -- sh -c 'mpirun $CLUSTER_MPIRUN_ARGS -np 4 -H %s --map-by slot --bind-to none %s %s'" % (
                CLUSTER, TWO_PER_HOST, binary, args)
        else:
            command = "mpirun -np %d --bind-to none %s %s" % (ranks, binary, args)
        job = run(command)
        if cluster and job.returncode == 77:
            return None
        if job.returncode != 0:
            sys.exit("failed: %s\n%s%s" % (command, job.stdout[-2000:], job.stderr[-2000:]))
        print(job.stdout.strip(), flush=True)
        return json.load(open(out.name))


def bound_run(build, rate_mbit, settings):
    """cluster_allreduce on the emulated hosts; `settings` ("NAME=VALUE,..."): kolo's, for every rank."""
    exports = " ".join("-x %s" % kv for kv in settings.split(",") if kv)
    with tempfile.NamedTemporaryFile(suffix=".json", dir="/var/tmp") as out:
        command = ("%s --rate-mbit %d -- sh -c 'mpirun $CLUSTER_MPIRUN_ARGS -np 4 -H %s --map-by slot --bind-to none "
                   "%s %s --interface eth0 --link-gbit %g --json %s'"
                   % (CLUSTER, rate_mbit, TWO_PER_HOST, exports, build / "benchmarks" / "cluster_allreduce",
                      rate_mbit / 1000, out.name))
        job = run(command)
        if job.returncode == 77:
            return None
        if job.returncode != 0:
            sys.exit("failed: %s\n%s%s" % (command, job.stdout[-2000:], job.stderr[-2000:]))
        print(job.stdout.strip(), flush=True)
        result = json.load(open(out.name))
        result["settings"] = settings
        return result


def latency_run(build):
    """resnet50_allreduce on 2 ranks, for its one-small-allreduce latency (kolo and MPI)."""
    with tempfile.NamedTemporaryFile(suffix=".json", dir="/var/tmp") as out:
        command = "mpirun -np 2 --bind-to none %s --steps 5 --rounds 1 --json %s" % (
            build / "benchmarks" / "resnet50_allreduce", out.name)
        job = run(command)
        if job.returncode != 0:
            sys.exit("failed: %s\n%s%s" % (command, job.stdout[-2000:], job.stderr[-2000:]))
        return json.load(open(out.name))["latency_4_bytes"]


def seconds(result, mode):
    return next((r["seconds"] for r in result["rows"] if r["name"] == mode), None)


def collectives(size_bytes):
    return max(1, math.ceil(size_bytes / FUSION_BYTES))


def ring_terms(ranks, size_bytes):
    """(latency steps, bytes through each link) of a ring allreduce; per fused collective for steps."""
    return 2 * (ranks - 1), 2.0 * (ranks - 1) / ranks * size_bytes


def comm_time(gpus, size_bytes, net_gbit, hierarchical, fit):
    """Time to allreduce `size_bytes` of gradients over `gpus` GPUs on the stated cluster."""
    hosts = max(1, gpus // GPUS_PER_HOST)
    local = min(gpus, GPUS_PER_HOST)
    n = collectives(size_bytes)
    net = net_gbit * 1e9 / 8 * fit["link_efficiency"]
    t = n * fit["per_collective_s"]
    if hosts == 1 or hierarchical:
        # Inside: reduce-scatter and allgather over NVLink (each half a ring allreduce)...
        steps, per_link = ring_terms(local, size_bytes)
        t += n * steps * NVLINK_LATENCY_S + per_link / NVLINK_BYTES_PER_S
        if hosts > 1:
            # ...across: each local rank's shard among the hosts, all shards through the host's link.
            steps, per_link = ring_terms(hosts, size_bytes)
            t += n * steps * NET_LATENCY_S + per_link / net
        return t
    # Flat: one ring over every GPU; each host's link carries one ring edge each way.
    steps, per_link = ring_terms(gpus, size_bytes)
    return t + n * steps * NET_LATENCY_S + per_link / net


def step_time(compute_s, comm_s, gpus, fit):
    # Communication hides behind the share of compute fitted here; the rest shows, and so does the
    # last negotiation (a bit-vector allreduce over every rank: log2 steps between hosts).
    negotiation = 2 * math.ceil(math.log2(max(gpus, 2))) * NET_LATENCY_S
    return compute_s + max(0.0, comm_s - fit["overlap"] * compute_s) + negotiation


def fit_model(measured, bound, latency, compute_s):
    """The three figures fitted to the measurements (each explained in the report)."""
    overlaps = []
    for key, (timed, alone) in measured.items():
        if key == "1" or timed is None:
            continue
        for mode in ("kolo, flat", "kolo, hierarchical"):
            t, c = seconds(timed, mode), seconds(alone, mode)
            if t is None or c is None or c <= 0:
                continue
            overlaps.append(min(1.0, max(0.0, (compute_s + c - t) / compute_s)))
    # kolo's fixed cost per collective: one small allreduce through kolo, beyond one through MPI.
    fixed = max(0.0, latency["kolo_seconds"] - latency["mpi_seconds"])
    efficiency = 1.0
    if bound is not None:
        efficiency = min(1.0, bound["least_seconds"] / seconds(bound, "kolo, hierarchical"))
    overlaps.sort()
    return {"overlap": overlaps[len(overlaps) // 2] if overlaps else 0.0, "per_collective_s": fixed,
            "link_efficiency": efficiency}


def pyplot():
    """matplotlib, imported only to plot, so that benchmarks/tables.py can import this file's tables."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def measured_series(measured):
    """The points measured (keys), and per mode [(point's index, images/s, efficiency %)]; also the docs' SVG's."""
    keys = [k for k in ("1", "2", "4", "2x2") if measured.get(k, (None,))[0] is not None]
    base, series = seconds(measured["1"][0], "kolo, flat"), {mode: [] for mode in MODES}
    for mode in MODES:
        for i, k in enumerate(keys):
            t = seconds(measured[k][0], mode) or (seconds(measured[k][0], "kolo, flat") if k == "1" else None)
            if t is not None:
                series[mode].append((i, measured[k][0]["ranks"] * measured[k][0]["batch"] / t, 100.0 * base / t))
    return keys, series


def plot_measured(measured, out):
    plt = pyplot()
    keys, series = measured_series(measured)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mode, style in zip(MODES, ("o-", "s-", "^--")):
        for ax, column in ((left, 1), (right, 2)):  # throughput, efficiency
            ax.plot([p[0] for p in series[mode]], [p[column] for p in series[mode]], style, label=mode)
    labels = {"1": "1 rank", "2": "2 ranks", "4": "4 ranks", "2x2": "2 hosts x 2"}
    for ax, title in ((left, "throughput (images/s)"), (right, "scaling efficiency (%)")):
        ax.set_xticks(range(len(keys)), [labels[k] for k in keys])
        ax.set_title(title)
        ax.grid(alpha=0.3)
    right.set_ylim(0, 110)
    left.legend(fontsize=8)
    fig.suptitle("Synthetic ResNet-50 step, %.0f ms emulated compute per rank, measured here"
                 % (1e3 * measured["1"][0]["compute_seconds"]))
    fig.tight_layout()
    fig.savefig(out / "scaling_measured.png", dpi=110)
    plt.close(fig)


def projection(fit):
    gpus = [8 * 2 ** i for i in range(8)]  # 8 .. 1024
    table = {}
    for name, size, images, _ in MODELS:
        compute = BATCH / images
        for gbit in NET_GBIT:
            for hierarchical in (False, True):
                table[(name, gbit, hierarchical)] = [
                    compute / step_time(compute, comm_time(g, size, gbit, hierarchical, fit), g, fit) for g in gpus]
    return gpus, table


def plot_projection(gpus, table, out):
    plt = pyplot()
    fig, axes = plt.subplots(1, len(MODELS), figsize=(14, 4.2), sharey=True)
    for ax, (name, size, images, horovod) in zip(axes, MODELS):
        for gbit, color in zip(NET_GBIT, ("tab:gray", "tab:red", "tab:blue")):
            ax.plot(gpus, [100 * e for e in table[(name, gbit, False)]], "--", color=color, label="flat, %d Gb/s" % gbit)
            ax.plot(gpus, [100 * e for e in table[(name, gbit, True)]], "-", color=color,
                    label="hierarchical, %d Gb/s" % gbit)
        ax.plot([512], [100 * horovod], "k*", markersize=12, label="Horovod, published (25 Gb/s)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(gpus, [str(g) for g in gpus])
        ax.set_title("%s (%.0f MB of gradients)" % (name, size / 1e6))
        ax.set_xlabel("GPUs (8 per host)")
        ax.grid(alpha=0.3)
        ax.set_ylim(0, 105)
    axes[0].set_ylabel("scaling efficiency (%)")
    axes[0].legend(fontsize=8, loc="lower left")
    fig.suptitle("Projected from the cost model fitted here (8 GPUs per host, NVLink inside; link per host between hosts)")
    fig.tight_layout()
    fig.savefig(out / "scaling_projection.png", dpi=110)
    plt.close(fig)


LABELS = {"1": "1 rank", "2": "2 ranks, one host", "4": "4 ranks, one host", "2x2": "2 hosts x 2 ranks"}


def measured_table(measured):
    """The measured steps as a Markdown table (scaling.md's, and benchmarks/README.md's through tables.py)."""
    base = seconds(measured["1"][0], "kolo, flat")
    lines = ["| ranks | mode | step (ms) | images/s | efficiency | communication alone (ms) |",
             "|---|---|---:|---:|---:|---:|"]
    for key in ("1", "2", "4", "2x2"):
        timed, alone = measured.get(key, (None, None))
        if timed is None:
            lines.append("| %s | (not measured: the emulated cluster needs root and iproute2) | | | | |" % LABELS[key])
            continue
        ranks = timed["ranks"]
        for mode in MODES:
            t = seconds(timed, mode)
            if t is None:
                continue
            c = seconds(alone, mode)
            lines.append("| %s | %s | %.1f | %.0f | %.0f%% | %.1f |" % (LABELS[key], mode, 1e3 * t, ranks * BATCH / t,
                                                                      100 * base / t, 1e3 * c))
    return lines


def bound_table(bound):
    """The cross-host allreduce against its bound, as a Markdown table."""
    lines = ["| | time (ms) | crossed (MB) | bytes / least | time / least |", "|---|---:|---:|---:|---:|"]
    for r in bound["rows"]:
        lines.append("| %s | %.1f | %.1f | %.2f | %.2f |" % (
            r["name"], 1e3 * r["seconds"], r["crossed_bytes"] / 1e6, r["crossed_bytes"] / bound["least_crossed_bytes"],
            r["seconds"] / bound["least_seconds"]))
    return lines


def fit_table(fit):
    """What was fitted, as a Markdown table."""
    return ["| fitted | value | from |", "|---|---:|---|",
            "| overlap | %.2f | share of compute that hid communication: (compute + comm alone - step) / compute, "
            "median over the multi-rank kolo runs |" % fit["overlap"],
            "| fixed cost per collective | %.1f us | one 4-byte allreduce through kolo minus one through "
            "MPI_Allreduce, 2 ranks (`resnet50_allreduce`): negotiation and the engine's hand-offs |"
            % (1e6 * fit["per_collective_s"]),
            "| link efficiency | %.2f | least time / measured time of kolo's hierarchical cross-host allreduce "
            "above (TCP through Open MPI; applied to every link between hosts) |" % fit["link_efficiency"]]


def projection_table(gpus, table):
    """The projected efficiencies, as a Markdown table."""
    lines = ["| model | link | mode | " + " | ".join(str(g) for g in gpus) + " |",
             "|---|---|---|" + "---:|" * len(gpus)]
    for name, _, _, _ in MODELS:
        for gbit in NET_GBIT:
            for hierarchical in (False, True):
                eff = table[(name, gbit, hierarchical)]
                lines.append("| %s | %d Gb/s | %s | %s |" % (name, gbit, "hierarchical" if hierarchical else "flat",
                                                            " | ".join("%.0f%%" % (100 * e) for e in eff)))
    return lines


def write_markdown(args, measured, bound, fit, gpus, table, out):
    lines = ["# kolo scaling report", "",
             "Written by `%s`; figures from one run on this machine (%d cores)." % (
                 " ".join(["/usr/bin/python3 benchmarks/scaling_report.py"] + sys.argv[1:]), os.cpu_count()), "",
             "## Measured: synthetic ResNet-50 step", "",
             "`benchmarks/synthetic_step`: ResNet-50's 161 gradients (102 MB fp32), %.0f ms of emulated compute per "
             "step (sleep: the CPUs carry only the traffic), batch %d per rank, median of %d steps. kolo reduces each "
             "gradient as backward produces it; the peer reduces all of them with one MPI_Allreduce after backward."
             % (args.compute_ms, BATCH, args.steps), ""]
    lines += measured_table(measured)
    lines += ["", "Efficiency is the 1-rank step time over the step time (ideal: 100%). One host has 2 cores: at 4 "
              "ranks, and on the emulated hosts (which share them), the ranks' traffic competes for the same CPUs, "
              "so these points understate what separate machines would do.", "",
              "![measured](scaling_measured.png)", ""]
    if bound is not None:
        lines += ["## Cross-host allreduce against its bound", "",
                  "`benchmarks/cluster_allreduce` on 2 emulated hosts x 2 ranks, each host's link capped at %g Mbit/s "
                  "each way (tc tbf); no added delay (this kernel has no netem), so the bridge's own latency (tens of "
                  "microseconds). ResNet-50's gradient set, summed. Bytes that crossed are read from the hosts' "
                  "interface counters; the least an allreduce of S bytes over H hosts must send out of all hosts is "
                  "2S(H-1), and at the link's rate that takes 2S(H-1)/H / rate. kolo's settings: %s." % (
                      bound["link_gbit"] * 1000,
                      bound.get("settings") or "its defaults"), ""]
        lines += bound_table(bound)
        lines += [""]
    lines += ["## The cost model, and what was fitted", "",
              "Per step: `t = compute + max(0, comm - overlap x compute) + negotiation`. `comm` is, per fused "
              "collective (ceil(S / 64 MiB) of them), a fixed cost plus ring allreduce terms: 2(n-1) latency steps "
              "and 2(n-1)/n x S bytes through the slowest link. Flat: one ring over every GPU, each host's link "
              "carrying one ring edge. Hierarchical: reduce-scatter and allgather inside the host over NVLink, and "
              "across hosts one ring per local rank over its shard, all shards through the host's link. "
              "`negotiation`: the last cycle's bit-vector allreduce, 2 log2(GPUs) latency steps.", ""]
    lines += fit_table(fit)
    lines += ["",
              "Stated, not fitted: %d GPUs per host; NVLink %.0f GB/s per GPU and %.0f us per ring step; %s Gb/s "
              "per host between hosts and %.0f us per ring step; batch %d per GPU. Assumed compute alone per GPU "
              "(fp32, V100 class): %s." % (
                  GPUS_PER_HOST, NVLINK_BYTES_PER_S / 1e9, NVLINK_LATENCY_S * 1e6,
                  " and ".join(str(g) for g in NET_GBIT), NET_LATENCY_S * 1e6, BATCH,
                  ", ".join("%s %.0f images/s" % (m[0], m[2]) for m in MODELS)), "",
              "## Projection: 8 to 1024 GPUs", ""]
    lines += projection_table(gpus, table)
    lines += ["", "Horovod's published scaling at 512 GPUs (25 Gb/s RoCE, Pascal GPUs): %s." % ", ".join(
        "%s %.0f%%" % (m[0], 100 * m[3]) for m in MODELS), "",
              "![projection](scaling_projection.png)", "",
              "The model has no stragglers, jitter or input pipeline, which is where real jobs lose their last "
              "10%: where it reads 100%, communication hides entirely behind compute and the link is not what "
              "limits scaling. "
              "A projection, not a measurement: it carries the fitted figures from 2 cores and emulated hosts to "
              "hardware this machine is not. Its use is the shape: where flat and hierarchical part ways (the "
              "latency steps of one ring over every GPU grow with the GPU count; the hierarchical ring's grow with "
              "the host count), and how much of the link a model's gradients need per step of compute.", ""]
    (out / "scaling.md").write_text("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--compute-ms", type=float, default=200.0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--bound-rate-mbit", type=int, default=1000)
    parser.add_argument("--bound-settings", default="", help="kolo's settings for the cross-host bound run, "
                        "NAME=VALUE,... (those KOLO_AUTOTUNE kept on that link, say); default: kolo's defaults")
    parser.add_argument("--replot", action="store_true", help="redo the fit, plots and Markdown from the saved "
                        "measurements (OUT/scaling_measured.json) without measuring again")
    args = parser.parse_args()
    build, out = Path(args.build).resolve(), Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if shutil.which("mpirun") is None:
        sys.exit("mpirun not found (apt-get install openmpi-bin)")

    saved = out / "scaling_measured.json"
    if args.replot:
        data = json.loads(saved.read_text())
        measured, bound, latency = data["measured"], data["bound"], data["latency"]
    else:
        measured = {}
        for key, ranks, cluster in (("1", 1, False), ("2", 2, False), ("4", 4, False), ("2x2", 4, True)):
            timed = synthetic(build, ranks, args.compute_ms, args.steps, cluster)
            alone = synthetic(build, ranks, 0, args.steps, cluster) if timed is not None else None
            measured[key] = (timed, alone)
        bound = bound_run(build, args.bound_rate_mbit, args.bound_settings)
        latency = latency_run(build)
        saved.write_text(json.dumps({"measured": measured, "bound": bound, "latency": latency}, indent=1))
    fit = fit_model(measured, bound, latency, args.compute_ms / 1e3)
    print("fitted:", fit)
    gpus, table = projection(fit)
    plot_measured(measured, out)
    plot_projection(gpus, table, out)
    write_markdown(args, measured, bound, fit, gpus, table, out)
    print("wrote", out / "scaling.md", out / "scaling_measured.png", out / "scaling_projection.png")


if __name__ == "__main__":
    main()
