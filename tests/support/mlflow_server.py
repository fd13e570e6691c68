"""MLflow tracking servers for tests, on 127.0.0.1 and a free port, stopped by their process
group: :func:`mlflow_server` on any backend store (``mlflow server`` itself), and
:func:`team_mlflow_server`, the project's own team recipe (``scripts/mlflow_server.sh``:
PostgreSQL backend store of the ``postgres`` fixture's cluster, password from ``PGPASSWORD``,
artifacts proxied into a temp folder)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.servers import PostgresServer, free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mlflow_server.sh"


@dataclass
class MlflowServer:
    uri: str
    backend: str
    artifacts: Path
    state: Path


@contextlib.contextmanager
def team_mlflow_server(postgres: PostgresServer, folder: Path) -> Iterator[MlflowServer]:
    """Start the server with ``scripts/mlflow_server.sh start``; ``stop`` on exit."""
    database = postgres.create_database()
    port = free_port()
    backend = postgres.url(database, driver="psycopg")
    env = {
        **os.environ,
        **postgres.env,
        # the script runs `mlflow` from PATH (`make` puts the venv there; a bare pytest may not)
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GENFAIR_MLFLOW_BACKEND": backend,
        "GENFAIR_MLFLOW_ARTIFACTS": str(folder / "artifacts"),
        "GENFAIR_MLFLOW_PORT": str(port),
        "GENFAIR_MLFLOW_WORKERS": "1",
        "GENFAIR_MLFLOW_STATE": str(folder / "state"),
        # no background job runner (it starts a huey consumer per worker)
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    }
    started = subprocess.run(
        ["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=300
    )
    try:
        if started.returncode:
            pytest.fail(f"scripts/mlflow_server.sh start failed:\n{started.stdout}{started.stderr}")
        yield MlflowServer(
            f"http://127.0.0.1:{port}", backend, folder / "artifacts", folder / "state"
        )
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, timeout=60)
        postgres.drop_database(database)


@contextmanager
def mlflow_server(store: str, cwd: Path, artifacts: Path | None = None) -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of a server on ``store`` (a backend-store URI), serving
    artifacts from ``artifacts`` when given, once it answers ``/health``."""
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    serve = ["--artifacts-destination", str(artifacts), "--serve-artifacts"] if artifacts else []
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            store,
            *serve,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=cwd,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:  # the state to wait for: the server answers /health
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, (
                "mlflow server did not start"
            )
            time.sleep(0.3)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
