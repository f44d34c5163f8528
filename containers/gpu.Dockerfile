# kolo on NVIDIA GPUs: CUDA 13 and NCCL's headers from NVIDIA's CUDA devel image (Ubuntu 24.04), Open MPI
# and Gloo from Ubuntu's packages, PyPI's torch (a CUDA 13 build, with its own NCCL), kolo built from this
# source tree with its GPU code. Build it from the repository's root (docs/containers.md):
#
#   docker build -f containers/gpu.Dockerfile -t kolo:gpu .
#   docker run --rm --gpus all --ipc=host kolo:gpu kolorun -np 2 python examples/pytorch/digits_kolo.py
#
# Two stages: the devel image (compiler, nvcc, NCCL's headers) builds kolo into a virtual environment,
# /opt/kolo; the image that runs it is NVIDIA's small CUDA base image with that environment. kolo links the
# CUDA runtime statically and loads NCCL at run time (the one torch loaded: docs/install.md, "Which NCCL"),
# so the toolkit stays behind in the first stage. This file has not been built yet: no GPU machine with a
# Docker engine has been at hand (docs/containers.md, "What has been tried").

ARG CUDA_VERSION=13.0.0
ARG UBUNTU=ubuntu24.04

FROM nvidia/cuda:${CUDA_VERSION}-devel-${UBUNTU} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake make libopenmpi-dev openmpi-bin python3-dev python3-venv libgloo-dev \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/kolo
ENV PATH=/opt/kolo/bin:$PATH
# The framework first: PyPI's torch for Linux is a CUDA build and brings its own NCCL.
RUN pip install --no-cache-dir torch scikit-learn
COPY . /src/kolo
# The GPUs kolo's kernels are compiled for (CMake's CMAKE_CUDA_ARCHITECTURES): 80 A100, 90 H100 and H200,
# with PTX for later GPUs; "70;75" for V100 and T4.
ARG KOLO_CUDA_ARCHITECTURES="80;90"
RUN KOLO_WITH_CUDA=1 KOLO_WITH_GLOO=1 KOLO_CUDA_ARCHITECTURES="$KOLO_CUDA_ARCHITECTURES" \
      pip install --no-cache-dir /src/kolo \
 && kolorun --check-build

FROM nvidia/cuda:${CUDA_VERSION}-base-${UBUNTU}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 openmpi-bin libgloo0 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/kolo /opt/kolo
# Open MPI refuses to start as root without the first two (kolorun passes --allow-run-as-root itself; plain
# mpirun needs them). The third: Docker's default seccomp profile denies Open MPI's single-copy transfers
# between ranks (process_vm_readv; "Read -1, expected 65536, errno = 1"), so they go through /dev/shm
# instead (or run with --cap-add SYS_PTRACE and unset it).
ENV PATH=/opt/kolo/bin:$PATH \
    OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_btl_vader_single_copy_mechanism=none
WORKDIR /workspace
COPY examples/pytorch examples/pytorch
CMD ["kolorun", "--check-build"]
