"""A sharded optimizer's job for test_zero_resume.py: trains `--steps` steps of Adam (zero_stage) on its
share of every batch, from scratch (--save: its checkpoint, consolidated on rank 0, written there) or from a
checkpoint (--resume, written at any number of ranks), then writes the model's weights (--out, rank 0)."""
import argparse

import torch
import torch.nn.functional as F

BATCH = 24  # split evenly at 2, 3 and 4 ranks


def make_model():
    torch.manual_seed(4321)
    return torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3), torch.nn.Tanh(),
                               torch.nn.Linear(3, 1))


def batch(step):
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(BATCH, 7, generator=g), torch.randn(BATCH, 1, generator=g)


def main():
    import kolo.torch as kolo  # here: the test imports this file's model and batches without kolo
    parser = argparse.ArgumentParser()
    parser.add_argument("--stage", type=int, required=True)
    parser.add_argument("--first-step", type=int, default=0)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--resume")
    parser.add_argument("--save")
    parser.add_argument("--out")
    args = parser.parse_args()
    kolo.init()
    model = make_model()
    checkpoint = torch.load(args.resume) if args.resume else None
    if checkpoint:
        model.load_state_dict(checkpoint["model"])
    optimizer = kolo.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01), zero_stage=args.stage,
                                          named_parameters=model.named_parameters(), bucket_bytes=64)
    if checkpoint:
        optimizer.load_state_dict(checkpoint["optimizer"])
    rows = slice(kolo.rank() * BATCH // kolo.size(), (kolo.rank() + 1) * BATCH // kolo.size())
    for step in range(args.first_step, args.first_step + args.steps):
        x, y = batch(step)
        optimizer.zero_grad()
        F.mse_loss(model(x[rows]), y[rows]).backward()
        optimizer.step()
    if args.save:
        optimizer.consolidate_state_dict(to=0)
        if kolo.rank() == 0:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, args.save)
    if args.out and kolo.rank() == 0:
        torch.save(model.state_dict(), args.out)
    print("rank %d of %d: %d steps from step %d, zero_stage %d" % (kolo.rank(), kolo.size(), args.steps,
                                                                 args.first_step, args.stage))


if __name__ == "__main__":
    main()
