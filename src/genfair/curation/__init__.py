"""Dataset curation: the inputs a methodology needs before any model is asked."""
