"""The durability lab's pure part: the grid of settings (``grid.py``) and one seeded run
and its figures (``runs.py``). Spark lives in ``kafkaviz/lab/spark_jobs.py``; nothing here
imports it, so a run is the same inside a Spark executor and outside."""
