"""DVC stage news_topics: paper 001's document level, one LDA over every model's articles."""

from _common import run

from genfair.pipeline import news_topics

if __name__ == "__main__":
    run("news_topics", news_topics)
