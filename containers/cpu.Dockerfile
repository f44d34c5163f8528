# kolo on CPUs: Debian 12, Open MPI and Gloo from Debian's packages, torch's CPU-only wheel, kolo built
# from this source tree. Build it from the repository's root (docs/containers.md):
#
#   docker build -f containers/cpu.Dockerfile -t kolo:cpu .
#   docker run --rm --shm-size=1g kolo:cpu        # trains examples/pytorch/digits_kolo.py on 2 ranks
#
# Two stages: the first has the compiler, CMake and the headers and builds kolo into a virtual environment,
# /opt/kolo; the second has only what runs it (Python, Open MPI, Gloo's library) and that environment.
# tools/containers/try_cpu_dockerfile.sh builds and runs this file.

ARG BASE=debian:12

FROM ${BASE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake make libopenmpi-dev openmpi-bin python3-dev python3-venv libgloo-dev ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/kolo
ENV PATH=/opt/kolo/bin:$PATH
# The framework first (kolo.torch needs no torch to build, but kolo's build looks for each framework).
# PyTorch's CPU-only wheels; TORCH_INDEX_URL=https://pypi.org/simple takes PyPI's torch, a CUDA build of
# several GB that runs on CPUs too.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install --no-cache-dir --index-url "$TORCH_INDEX_URL" torch \
 && pip install --no-cache-dir scikit-learn
COPY . /src/kolo
RUN KOLO_WITH_CUDA=0 KOLO_WITH_GLOO=1 pip install --no-cache-dir /src/kolo \
 && kolorun --check-build

FROM ${BASE}
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
CMD ["kolorun", "-np", "2", "python", "examples/pytorch/digits_kolo.py"]
