"""DVC stage map_occupations: occupations with WordNet aliases and real-world statistics."""

from _common import run

from genfair.study.curation_stages import occupations_table

if __name__ == "__main__":
    run("map_occupations", occupations_table)
