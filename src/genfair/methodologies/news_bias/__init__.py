"""News bias of AI-generated content (Fang et al., paper 001): word, sentence and document
level gender and racial bias of LLM-written news against their original articles.

Work in progress: the measurement modules are here; the methodology object and its
pipeline stages are not wired yet (see the issue tracker).
"""
