"""A team MLflow server for tests, started by the project's own recipe
(``scripts/mlflow_server.sh``): PostgreSQL backend store (a database of the ``postgres``
fixture's cluster, password from ``PGPASSWORD``), artifacts proxied into a temp folder, on
127.0.0.1 and a free port; stopped by its process group."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
def mlflow_server(postgres: PostgresServer, folder: Path) -> Iterator[MlflowServer]:
    """Start the server with ``scripts/mlflow_server.sh start``; ``stop`` on exit."""
    database = postgres.create_database()
    port = free_port()
    backend = postgres.url(database, driver="psycopg")
    env = {**os.environ, **postgres.env,
           "GENFAIR_MLFLOW_BACKEND": backend,
           "GENFAIR_MLFLOW_ARTIFACTS": str(folder / "artifacts"),
           "GENFAIR_MLFLOW_PORT": str(port), "GENFAIR_MLFLOW_WORKERS": "1",
           "GENFAIR_MLFLOW_STATE": str(folder / "state"),
           # no background job runner (it starts a huey consumer per worker)
           "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    started = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=300)
    try:
        if started.returncode:
            pytest.fail(f"scripts/mlflow_server.sh start failed:\n{started.stdout}{started.stderr}")
        yield MlflowServer(f"http://127.0.0.1:{port}", backend, folder / "artifacts", folder / "state")
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, timeout=60)
        postgres.drop_database(database)
