"""A run the machine cannot hold is refused before any probe is built.

Each count of a config is bounded (:mod:`genfair.limits`), but counts multiply: a methodology
estimates its largest tables from them (:meth:`genfair.methodologies.base.Methodology.footprint`,
rows x bytes per row), and :func:`check_footprint` compares each with the memory this machine
has available now. The estimate is simple and stated in the message, so a user can check it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from genfair.errors import ConfigError
from genfair.names import PARAMS_FILE

__all__ = ["available_memory", "check_footprint"]

GIB = 1 << 30


def available_memory() -> int:
    """Bytes of memory available to a new allocation: Linux's ``MemAvailable`` (free memory
    plus what the page cache can give back), else the machine's physical memory."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_footprint(method: Any, config: Any, available: int | None = None) -> None:
    """:class:`ConfigError` naming the key and the estimate when a table of ``method``'s run of
    ``config`` would need more memory than ``available`` (default: :func:`available_memory`)."""
    available = available_memory() if available is None else available
    for item in method.footprint(config):
        need = item.rows * item.bytes_per_row
        if need > available:
            raise ConfigError(
                f"{PARAMS_FILE}: methodologies.{method.name}.{item.key}: {item.what} would hold "
                f"about {item.rows:,} rows x {item.bytes_per_row:,} bytes = {need / GIB:,.1f} "
                f"GiB, more than the {available / GIB:,.1f} GiB this machine has available: "
                "lower it (or run on a larger machine)"
            )
