"""DVC stage collect_news: the news corpus and a report of what was skipped."""

from _common import run

from genfair.study.curation_stages import collect_news_corpus

if __name__ == "__main__":
    run("collect_news", collect_news_corpus)
