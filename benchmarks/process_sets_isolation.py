"""Does a slow process set hold up another? 4 ranks, sets {0, 1} and {2, 3}. The fast set runs --ops
allreduces of --kib KiB back to back and times them, in rounds that alternate two conditions:

  alone   the other set is idle
  beside  the other set is busy with allreduces whose rank 0 sleeps --sleep-ms before each (so its
          rank 1 waits in every one of them, its engine negotiating without an answer)

and reports the fast set's median time per op in each, and their ratio (1.0: no interference). The
peer is the same fast set alone, in the same job, so drift between rounds cancels out.

    kolorun -np 4 python3 benchmarks/process_sets_isolation.py [--ops 200] [--kib 64] [--rounds 5]
"""
import argparse
import statistics
import time

import torch

import kolo.torch as kolo


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--kib", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sleep-ms", type=float, default=20.0)
    args = parser.parse_args()
    kolo.init()
    if kolo.size() != 4:
        raise SystemExit("run with 4 ranks")
    slow, fast = kolo.add_process_set([0, 1]), kolo.add_process_set([2, 3])
    x = torch.ones(args.kib * 256)
    times = {"alone": [], "beside": []}

    def run_fast(condition):
        start = time.perf_counter()
        for i in range(args.ops):
            kolo.allreduce(x, name="fast.%d" % i, process_set=fast)
        times[condition].append((time.perf_counter() - start) / args.ops)

    for r in range(args.rounds):
        kolo.barrier()
        if fast.included():
            run_fast("alone")
        # The slow set then runs for about 1.5 times what the fast set took alone.
        took = torch.tensor([times["alone"][-1] * args.ops if fast.included() else 0.0])
        took = kolo.allreduce(took, op=kolo.Max, name="took.%d" % r).item()
        slow_ops = int(1.5 * took / (args.sleep_ms / 1000.0)) + 1
        kolo.barrier()
        if fast.included():
            run_fast("beside")
        else:
            for i in range(slow_ops):
                if kolo.rank() == 0:  # late to each op: rank 1's engine waits on it meanwhile
                    time.sleep(args.sleep_ms / 1000.0)
                kolo.allreduce(x, name="slow.%d.%d" % (r, i), process_set=slow)
    kolo.barrier()
    if kolo.rank() == 2:
        alone, beside = statistics.median(times["alone"]), statistics.median(times["beside"])
        print("# process set {2, 3}: %d allreduces of %d KiB, %d rounds; set {0, 1} meanwhile idle or busy with "
              "ops whose rank 0 is %.0f ms late to each" % (args.ops, args.kib, args.rounds, args.sleep_ms))
        print("%-8s %12s" % ("other", "us per op"))
        print("%-8s %12.1f" % ("idle", alone * 1e6))
        print("%-8s %12.1f" % ("slow", beside * 1e6))
        print("ratio slow / idle: %.3f" % (beside / alone))
    kolo.remove_process_set(slow)
    kolo.remove_process_set(fast)
    kolo.shutdown()


if __name__ == "__main__":
    main()
