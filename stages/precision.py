"""DVC stage precision: each headline's half-width, and each comparison's detectable
difference, forecast at the methodology's paper sizes (data/precision.json; the report and
track read it)."""

from _common import run

from genfair.study.precision import write_at_paper_size

if __name__ == "__main__":
    run("precision", write_at_paper_size)
