"""A real Dask cluster for tests: a scheduler and one-thread workers, started with the ``dask``
command line, every process bound to 127.0.0.1 (dashboards too) and in its own process
group, stopped by it.

Workers run without a nanny, so a worker is one process: SIGKILL to it is a lost machine,
and nothing restarts it. They import genfair and ``tests.support`` from this checkout
(``PYTHONPATH``), so tasks may use models built in test code.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip(
    "distributed",
    reason="Dask distributed is an optional extra: pip install -e '.[dask]' (CI installs it)",
)

ROOT = Path(__file__).resolve().parents[2]
DASK = str(Path(sys.executable).with_name("dask"))
#: seconds for the scheduler to answer and the workers to join: a start takes about 1.5 s
READY_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """The processes of one local cluster and a client of it."""

    def __init__(self, logs: Path, workers: int = 2, env: dict[str, str] | None = None):
        self.logs = logs
        self.env = {
            **os.environ,
            **(env or {}),
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]
            ),
            "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "3",
        }
        self.address = f"tcp://127.0.0.1:{free_port()}"
        self.scheduler = self._spawn(
            "scheduler",
            [
                DASK,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                self.address.rsplit(":", 1)[1],
                "--dashboard-address",
                "127.0.0.1:0",
            ],
        )
        self.workers: list[subprocess.Popen[bytes]] = []
        self.client: Any = None
        try:
            for _ in range(workers):
                self.add_worker()
            self.client = distributed.Client(self.address, timeout=READY_S, set_as_default=False)
            self.client.wait_for_workers(workers, timeout=READY_S)
        except BaseException:
            self.stop()
            raise

    def add_worker(self, resources: str | None = None) -> subprocess.Popen[bytes]:
        name = f"w{len(self.workers)}"
        extra = ["--resources", resources] if resources else []
        process = self._spawn(
            name,
            [
                DASK,
                "worker",
                self.address,
                "--host",
                "127.0.0.1",
                "--nthreads",
                "1",
                "--no-nanny",
                "--name",
                name,
                "--dashboard-address",
                "127.0.0.1:0",
                *extra,
            ],
        )
        self.workers.append(process)
        return process

    def _spawn(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - kept open by the child
        return subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.logs,
            start_new_session=True,
        )

    def worker_address(self, process: subprocess.Popen[bytes]) -> str:
        """The address of a worker process, as the scheduler knows it (by its ``--name``)."""
        name = f"w{self.workers.index(process)}"
        for address, info in self.client.scheduler_info(n_workers=-1)["workers"].items():
            if info.get("name") == name:
                return address
        raise LookupError(f"no worker named {name}")

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL one worker's process group: a machine lost mid-task."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=READY_S)

    def listening(self) -> set[str]:
        """The addresses every process of the cluster listens on."""
        import psutil

        found = set()
        for process in [self.scheduler, *self.workers]:
            if process.poll() is None:
                for conn in psutil.Process(process.pid).net_connections(kind="inet"):
                    if conn.status == psutil.CONN_LISTEN:
                        found.add(conn.laddr.ip)
        return found

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        for process in [*self.workers, self.scheduler]:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in [*self.workers, self.scheduler]:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:  # a worker blocked in a task: nothing left to save
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A fresh scheduler and two one-thread workers on 127.0.0.1."""
    cluster = Cluster(tmp_path_factory.mktemp("dask"))
    try:
        yield cluster
    finally:
        cluster.stop()
