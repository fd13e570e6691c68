"""pytest-benchmark measurements (``make benchmark``; quick mode in ``make test``: conftest.py).

A package so that its modules are imported as ``benchmarks.test_*``: several share a basename
with a test module under tests/ (test_answer_mapper.py, test_iris_granular.py), which pytest
refuses to collect in one session otherwise.
"""
