"""DVC stage curate_facet: FACET person crops and labels (``curation.facet``; the fixture by default)."""

from _common import run

from genfair.pipeline_images import curate_facet_crops

if __name__ == "__main__":
    run("curate_facet", curate_facet_crops)
