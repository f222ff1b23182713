# cosolve service image: the same service `make serve` runs, on 0.0.0.0:8000.
# Build: docker build -t cosolve .    Run: docker run -p 8000:8000 cosolve
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 cosolve
WORKDIR /srv/cosolve

# CPU-only torch first, pinned like pyproject.toml, so pip never pulls a CUDA build.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

COPY pyproject.toml README.md ./
COPY app ./app
COPY cli ./cli
COPY cosolve ./cosolve
COPY jobs ./jobs
COPY solvers ./solvers
COPY models ./models
COPY training ./training
RUN pip install .

COPY weights ./weights
RUN chown -R cosolve:cosolve /srv/cosolve
USER cosolve

EXPOSE 8000
# a fresh container compiles the numba kernels before it answers (about 45 s on 2 cores,
# minutes on a slow one): failures in the start period do not count
HEALTHCHECK --interval=30s --timeout=5s --start-period=300s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
# the settings are checked first (one line naming a bad COSOLVE_* variable, exit 2); run
# from the source tree like uvicorn was, so weights/ is found beside the code
CMD ["python", "-m", "cli.main", "serve", "--host", "0.0.0.0", "--port", "8000"]
