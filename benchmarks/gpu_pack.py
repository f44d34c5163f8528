"""torch's ways of packing ResNet-50's gradients (161 float32 tensors, 102 MB) into one buffer on the
GPU, beside kolo's (the gpu_pack binary, run in the same job): torch.cat into a flat buffer,
torch._foreach_copy_ into views of one, one copy per tensor, and one copy of all the bytes (the
bound). CUDA events around --reps repetitions on the current stream, medians over --rounds rounds
that take the rows in turn; each row's result is checked once, from a zeroed buffer (#wrong).

    python3 benchmarks/gpu_pack.py [--binary build/benchmarks/gpu_pack] [--reps 20] [--rounds 10] [--json FILE]

One table. A row's ratio is its time over the one-copy row that the same process measured (torch's,
or the binary's), so torch's rows and kolo's compare through their bounds: the two processes take
the GPU one after the other, not in interleaved rounds. Without torch on a GPU this says so and runs
only the binary; where the binary finds no GPU either (exit 77), on the host double.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from gradient_shapes import SHAPES, read_shapes

try:
    import torch
except ImportError:
    torch = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIPPED = 77  # the binary's exit status where it finds no GPU


def time_per_rep(fn, reps):
    """Seconds per call of fn, between CUDA events around `reps` calls on the current stream."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / reps


def torch_rows(shapes, reps, rounds, device):
    """torch's rows: [{name, seconds, bytes, wrong}], the one-copy bound first."""
    # Small positive integers, as the binary's: never the zero a cleared buffer holds.
    tensors = []
    for i, (_, shape) in enumerate(shapes):
        n = 1
        for d in shape:
            n *= d
        values = (torch.arange(n, device=device, dtype=torch.int64) + i * 131) % 2000 + 1
        tensors.append(values.to(torch.float32).view(shape))
    flats = [t.view(-1) for t in tensors]
    expected = torch.cat(flats)  # the packed buffer as it should be, and the bound's source
    total = expected.numel()
    flat = torch.empty(total, device=device)
    bound_dst = torch.empty(total, device=device)
    views, at = [], 0
    for t in tensors:
        views.append(flat[at:at + t.numel()].view(t.shape))
        at += t.numel()

    def per_tensor():
        for v, t in zip(views, tensors):
            v.copy_(t)

    cases = [("torch: one copy of all bytes (the bound)", lambda: bound_dst.copy_(expected), bound_dst),
             ("torch.cat into a flat buffer", lambda: torch.cat(flats, out=flat), flat)]
    if hasattr(torch, "_foreach_copy_"):
        cases.append(("torch._foreach_copy_ into views of one buffer",
                      lambda: torch._foreach_copy_(views, tensors), flat))
    else:
        print("# torch %s has no torch._foreach_copy_: that row is left out" % torch.__version__)
    cases.append(("torch: one copy per tensor", per_tensor, flat))

    rows = []
    for name, fn, dst in cases:  # once each, checked; also the warm-up
        dst.zero_()
        fn()
        rows.append({"name": name, "bytes": 8.0 * total, "wrong": int((dst != expected).sum().item()), "times": []})
    for _ in range(rounds):
        for row, (_, fn, _) in zip(rows, cases):
            row["times"].append(time_per_rep(fn, reps))
    for row in rows:
        row["seconds"] = statistics.median(row.pop("times"))
    return rows


def run_binary(device, args):
    """The gpu_pack binary's JSON and its output, or (None, output) where it found no GPU (exit 77)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "gpu_pack.json")
        command = [args.binary, "--device", device, "--json", out, "--shapes", args.shapes]
        if device == "cuda":  # the double takes its own few repetitions: it is slow
            command += ["--reps", str(args.reps), "--rounds", str(args.rounds)]
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if proc.returncode == SKIPPED:
            return None, proc.stdout
        if proc.returncode not in (0, 1) or not os.path.exists(out):  # 1: it ran, with #wrong results
            sys.exit("%s failed (exit %d):\n%s" % (" ".join(command), proc.returncode, proc.stdout))
        with open(out) as f:
            return json.load(f), proc.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "benchmarks", "gpu_pack"))
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", default="")
    args = parser.parse_args()

    rows = []
    if torch is None:
        where = "torch is not installed"
    elif not torch.cuda.is_available():
        where = "torch %s has no CUDA here" % torch.__version__
    else:
        where = "torch %s on %s" % (torch.__version__, torch.cuda.get_device_name())
        device = torch.device("cuda", torch.cuda.current_device())
        rows = torch_rows(read_shapes(args.shapes), args.reps, args.rounds, device)
    result, output = run_binary("cuda", args)
    if not rows:
        print("# %s: only kolo's gpu_pack binary runs" % where)
    if result is None:
        print("# gpu_pack: %s; on the host double instead (its times mean nothing)" % output.strip())
        result, output = run_binary("double", args)
    binary = [{"name": "gpu_pack: " + r["name"], "seconds": r["seconds"], "bytes": r["bytes"], "wrong": r["wrong"]}
              for r in result["rows"]]
    for group in (rows, binary):
        for r in group:
            r["ratio"] = r["seconds"] / group[0]["seconds"]
            r["gbps"] = r["bytes"] / r["seconds"] / 1e9

    print("# ResNet-50 gradients: %d float32 tensors (%.1f MB); %s; gpu_pack on %s" %
          (result["tensors"], result["bytes"] / 1e6, where, result["device"]))
    if rows:
        print("# torch: median of %d rounds of %d repetitions between CUDA events" % (args.rounds, args.reps))
    print("# gpu_pack: median of %d rounds of %d repetitions between device events" %
          (result["rounds"], result["reps"]))
    print("# GB/s counts bytes read + written; ratio = time / time of the one-copy row of the same process")
    print("%-58s %12s %10s %8s %8s" % ("", "time (us)", "GB/s", "ratio", "#wrong"))
    for r in rows + binary:
        print("%-58s %12.1f %10.1f %8.3f %8d" % (r["name"], r["seconds"] * 1e6, r["gbps"], r["ratio"], r["wrong"]))
    for line in output.splitlines():
        if line.startswith("# kolo's"):
            print(line)
    cat = [r for r in rows if r["name"].startswith("torch.cat")]
    pack = [r for r in binary if r["name"].endswith("kolo pack: one batched copy")]
    if cat and pack:
        print("# kolo's pack over its bound against torch.cat over its own: %.3fx the time" %
              (pack[0]["ratio"] / cat[0]["ratio"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "gpu_pack.py", "torch": where, "torch_rows": rows, "gpu_pack": result}, f, indent=2)
    return 1 if any(r["wrong"] for r in rows + binary) else 0


if __name__ == "__main__":
    sys.exit(main())
