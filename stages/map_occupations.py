"""DVC stage map_occupations: IRIS's occupation table (WordNet aliases, U.S./E.U. statistics)."""

from _common import run

from genfair.pipeline import occupations_table

if __name__ == "__main__":
    run("map_occupations", occupations_table)
