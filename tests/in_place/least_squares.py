"""What the in-place suite's least-squares programs share (tf_in_place.py, keras_in_place.py,
jax_in_place.py): their flags and their data, 48 fixed float64 rows (test_in_place.plain_gradient_descent
is the reference)."""
import argparse
import os
import signal

import numpy as np

ROWS, LR, COMMIT_EVERY = 48, 0.05, 4


def parse_args(count="--steps"):
    """--steps (or --epochs), --kill-at (rank 2 of 3 dies before that one), --out (rank 0's weights)."""
    parser = argparse.ArgumentParser()
    parser.add_argument(count, type=int, default=30)
    parser.add_argument("--kill-at", type=int, default=-1)
    parser.add_argument("--out", required=True)
    return parser.parse_args()


def data():
    """x (ROWS x 8) and y (ROWS x 1), as NumPy arrays."""
    rng = np.random.default_rng(0)
    return rng.normal(size=(ROWS, 8)), rng.normal(size=(ROWS, 1))


def die_if_due(step, kill_at, rank, size):
    """Rank 2 of 3 SIGKILLs itself at --kill-at."""
    if step == kill_at and size == 3 and rank == 2:
        os.kill(os.getpid(), signal.SIGKILL)


def my_rows(rank, size):
    """This rank's equal share of every batch (all ROWS)."""
    share = ROWS // size
    return slice(rank * share, (rank + 1) * share)
