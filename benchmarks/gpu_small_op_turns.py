"""A small GPU op's time on the host double, two builds of gpu_allreduce side by side: each way of
calling it (blocking allreduce, allreduce_async + wait, and both through kolo's thread with
KOLO_CALLER_DRIVES=0) with each build, in turns (the order reversed every other run), --runs times.
The double shares this machine's cores with everything else, so a row whose own allreduce (the peer
of the same run) took --calm-us or more is left out; the medians are over the rest.

    python3 benchmarks/gpu_small_op_turns.py --old OLD/gpu_allreduce --new NEW/gpu_allreduce \\
        [--np 2] [--runs 16] [--calm-us 25] [--log turns.log]
"""
import argparse
import os
import statistics
import subprocess

parser = argparse.ArgumentParser()
parser.add_argument("--old", required=True, help="gpu_allreduce of the build to compare against")
parser.add_argument("--new", required=True, help="gpu_allreduce of the build measured")
parser.add_argument("--np", type=int, default=2)
parser.add_argument("--runs", type=int, default=16)
parser.add_argument("--calm-us", type=float, default=25.0)
parser.add_argument("--shapes", default=os.path.join(os.path.dirname(__file__), "data", "two_small_shapes.txt"))
parser.add_argument("--log", default=None, help="every run's output, for the record")
args = parser.parse_args()

WAYS = [("allreduce_async + wait", ["--async", "1"], {}),
        ("blocking allreduce", ["--async", "0"], {}),
        ("blocking, through kolo's thread", ["--async", "0"], {"KOLO_CALLER_DRIVES": "0"})]
sides = [(way, build, path, flags, env) for way, flags, env in WAYS
         for build, path in (("old", args.old), ("new", args.new))]
rows = {(way, build): [] for way, build, _, _, _ in sides}
log = open(args.log, "w") if args.log else None
for run in range(args.runs):
    for way, build, path, flags, env in (sides if run % 2 == 0 else list(reversed(sides))):
        cmd = ["mpirun", "-np", str(args.np), "--oversubscribe", "--bind-to", "none"]
        for name, value in env.items():
            cmd += ["-x", "%s=%s" % (name, value)]
        cmd += [path, "--device", "double", "--max-bytes", "1024", "--rounds", "5", "--steps", "1",
                "--row-seconds", "0.3", "--shapes", args.shapes] + flags
        done = subprocess.run(cmd, env=dict(os.environ, **env), capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise SystemExit("%s failed (exit %d):\n%s" % (" ".join(cmd), done.returncode, done.stderr[-3000:]))
        out = done.stdout
        if log:
            log.write("== %s, %s build, run %d\n%s\n" % (way, build, run, out))
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 14 and f[2] == "float" and f[0].isdigit():
                rows[(way, build)].append((float(f[5]), float(f[9])))  # kolo's time, the double's

print("# a small GPU op (8 B to 1 KiB) on the host double, %d ranks, %d runs of each in turns; rows whose "
      "double allreduce took under %.0f us" % (args.np, args.runs, args.calm_us))
print("%-34s %6s %11s %11s %13s %12s" % ("way", "build", "rows kept", "kolo (us)", "double (us)", "kolo/double"))
for (way, build), got in rows.items():
    calm = [r for r in got if r[1] < args.calm_us]
    if not calm:
        print("%-34s %6s %5d/%-5d %11s %13s %12s" % (way, build, 0, len(got), "-", "-", "-"))
        continue
    print("%-34s %6s %5d/%-5d %11.1f %13.1f %11.2fx" % (
        way, build, len(calm), len(got), statistics.median(r[0] for r in calm),
        statistics.median(r[1] for r in calm), statistics.median(r[0] / r[1] for r in calm)))
