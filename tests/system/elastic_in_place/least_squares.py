"""What the in-place suite's least-squares programs share (tf_in_place.py, keras_in_place.py,
jax_in_place.py, which tests/system/elastic/test_jax_restart.py runs on the restart path too): their flags, their
data, 48 fixed float64 rows, and the reference, plain_gradient_descent."""
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
    """Rank 2 of 3 SIGKILLs itself at --kill-at. On the restart path (ELASTIC_TEST_HOSTS_FILE, what the
    discovery script prints), it first writes ELASTIC_TEST_HOSTS_AFTER there: its slot goes with it, and
    kolorun starts the job again on the slots left (not on 3, where it would die again)."""
    if step == kill_at and size == 3 and rank == 2:
        if os.environ.get("ELASTIC_TEST_HOSTS_FILE"):
            with open(os.environ["ELASTIC_TEST_HOSTS_FILE"], "w") as f:
                f.write(os.environ["ELASTIC_TEST_HOSTS_AFTER"] + "\n")
        os.kill(os.getpid(), signal.SIGKILL)


def my_rows(rank, size):
    """This rank's equal share of every batch (all ROWS)."""
    share = ROWS // size
    return slice(rank * share, (rank + 1) * share)


def plain_gradient_descent(steps):
    """The weights of the programs after `steps` full-batch steps, whatever failed."""
    x, y = data()
    w = np.zeros((8, 1))
    for _ in range(steps):
        w -= LR * (2.0 / ROWS) * x.T @ (x @ w - y)
    return w
