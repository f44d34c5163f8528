"""ResNet-50's gradient shapes (benchmarks/data), for the Python benchmarks; without MPI, so that a
one-process benchmark (gpu_pack.py) can read them too."""
import os

SHAPES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "resnet50_grad_shapes.txt")


def read_shapes(path=SHAPES):
    """[(name, shape tuple)] from a file of "name 64x3x7x7" lines."""
    shapes = []
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, dims = line.split()
                shapes.append((name, tuple(int(d) for d in dims.split("x"))))
    return shapes
