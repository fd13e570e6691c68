"""DVC stage report: the study report, data/report/index.html (self-contained, offline)."""

from _common import run

from genfair.study.report import build_report

if __name__ == "__main__":
    run("report", build_report)
