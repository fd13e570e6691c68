"""A local MLflow tracking server for tests (127.0.0.1, a free port, stopped by its process
group)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def mlflow_server(store: str, cwd: Path, artifacts: Path | None = None) -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of a server on ``store`` (a backend-store URI), serving
    artifacts from ``artifacts`` when given, once it answers ``/health``."""
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    serve = ["--artifacts-destination", str(artifacts), "--serve-artifacts"] if artifacts else []
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store, *serve,
                               "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                              cwd=cwd, env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:  # the state to wait for: the server answers /health
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, "mlflow server did not start"
            time.sleep(0.3)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
