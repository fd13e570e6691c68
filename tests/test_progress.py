"""genfair.logs.progress: plain log lines with counts and rate when output is not a terminal."""

from __future__ import annotations

import logging

import pytest

from genfair.logs import progress


def test_progress_logs_counts_and_rate_off_a_terminal(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="genfair.progress")
    assert list(progress(range(4), desc="labelling", unit="image", every=0)) == [0, 1, 2, 3]
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("labelling: 1/4 image (") and "/s" in lines[0]
    assert lines[-1].startswith("labelling: done, 4/4 image")


def test_progress_counts_updates_and_a_growing_total(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="genfair.progress")
    with progress(total=2, desc="generate", unit="call", every=0) as bar:
        bar.update(2)
        bar.total += 1  # the runner re-asks a call
        bar.update()
    assert caplog.records[-1].getMessage().startswith("generate: done, 3/3 call")


def test_progress_is_quiet_when_fast(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="genfair.progress")
    list(progress(range(100), desc="fast", every=30))
    assert not caplog.records
