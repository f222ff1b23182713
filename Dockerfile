# cosolve service image: the same service `make serve` runs, on 0.0.0.0:8000, with its job
# store in the volume /data and its numba kernels compiled when the image is built.
# Build: docker build -t cosolve .
# Run:   docker run -p 8000:8000 -v cosolve-data:/data --cpus 4 cosolve
FROM python:3.11-slim

# NUMBA_CPU_NAME=generic: numba keys its cache on the CPU it compiled for, so kernels
# compiled for the build machine's CPU would all compile again on a host with another one;
# generic x86-64 code loads anywhere. `--build-arg NUMBA_CPU_NAME=` compiles for the build
# machine's CPU instead (warm only on that CPU model).
ARG NUMBA_CPU_NAME=generic
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    COSOLVE_DATA_DIR=/data \
    NUMBA_CACHE_DIR=/srv/cosolve/numba-cache \
    NUMBA_CPU_NAME=${NUMBA_CPU_NAME}

RUN useradd --create-home --uid 10001 cosolve
WORKDIR /srv/cosolve

# The versions CI tests (requirements.lock, as constraints). torch's CPU build first, pinned
# like pyproject.toml's `neural` extra, so pip never pulls PyPI's CUDA build.
COPY requirements.lock ./
RUN pip install -c requirements.lock --no-deps --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

COPY pyproject.toml README.md ./
COPY app ./app
COPY cli ./cli
COPY cosolve ./cosolve
COPY jobs ./jobs
COPY solvers ./solvers
COPY models ./models
COPY training ./training
RUN pip install -c requirements.lock '.[neural]'

COPY weights ./weights
# The warm-up the server runs at start, now: every kernel compiles into NUMBA_CACHE_DIR
# (about 45 s on 2 cores), so a container finds them cached and is ready in seconds.
RUN python -c "from solvers.catalog import all_specs, warm_up; [warm_up(s.name) for s in all_specs()]"
# the code stays root's (read-only to the service); the kernel cache stays writable, for a
# host whose CPU needs other code, and the data folder is the service's
RUN mkdir -p /data && chown -R cosolve:cosolve /srv/cosolve/numba-cache /data
USER 10001
# jobs, their inputs and solutions outlive the container (COSOLVE_DATA_DIR)
VOLUME /data

EXPOSE 8000
# a container starts from the compiled kernels; the start period covers loading them and
# the weights on a slow machine
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"]
# the settings are checked first (one line naming a bad COSOLVE_* variable, exit 2); run
# from the source tree like uvicorn was, so weights/ is found beside the code. The job
# workers default to the CPUs the container may use (its --cpus quota) less one.
CMD ["python", "-m", "cli.main", "serve", "--host", "0.0.0.0", "--port", "8000"]
