"""The renderer matrix: the evidence block rendered by every markdown renderer it is shown in,
each rendering read back as a browser would (`matrix.py`, `checks.py`, `cases.py`, `run.py`).

`python -m tests.renderers` runs it on the hostile corpus and prints what breaks where.
"""
