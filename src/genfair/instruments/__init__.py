"""Instruments turn responses into labels: group-word counts, sentence groups, sentiment,
toxicity, topics, refusals. Each is a small class or pure function with its source cited."""
