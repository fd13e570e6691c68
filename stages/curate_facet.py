"""DVC stage curate_facet: one person crop per FACET box (from a release, or the fixture)."""

from _common import run

from genfair.study.curation_stages import curate_facet_crops

if __name__ == "__main__":
    run("curate_facet", curate_facet_crops)
