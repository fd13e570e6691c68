"""DVC stage validate_instruments: the face instrument's accuracy per attribute and group
on the labelled photos that ship in packages (the instrument's own bias)."""

from _common import run

from genfair.pipeline_images import validate_instruments

if __name__ == "__main__":
    run("validate_instruments", validate_instruments)
