"""Offline resources the instruments need (lexical databases), installed by setup, never
downloaded at run time."""
