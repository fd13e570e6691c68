"""Figures of the papers, drawn from stage outputs."""
