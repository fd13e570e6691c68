"""DVC stage facet_fixture: a small FACET-format FIXTURE built from package-shipped photos."""

from _common import run

from genfair.pipeline_images import facet_fixture

if __name__ == "__main__":
    run("facet_fixture", facet_fixture)
