"""DVC stage validate_instruments: the face instrument's accuracy per attribute and group."""

from _common import run

from genfair.study.curation_stages import validate_instruments

if __name__ == "__main__":
    run("validate_instruments", validate_instruments)
