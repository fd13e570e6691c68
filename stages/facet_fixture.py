"""DVC stage facet_fixture: a FACET-format FIXTURE from package-shipped photos (not FACET)."""

from _common import run

from genfair.study.curation_stages import facet_fixture

if __name__ == "__main__":
    run("facet_fixture", facet_fixture)
