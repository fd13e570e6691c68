"""DVC stage score: all models together (leaderboards; simulators labelled, not ranked)."""

from _common import run

from genfair.study.scoring import score_study

if __name__ == "__main__":
    run("score", score_study)
