"""DVC stage collect_news: the news corpus of paper 001 (feeds, sitemaps, files, embedded)."""

from _common import run

from genfair.pipeline import collect_news_corpus

if __name__ == "__main__":
    run("collect_news", collect_news_corpus)
