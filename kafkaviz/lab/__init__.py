"""The lab app: the durability lab and log analytics (Spark jobs in spark_jobs.py), its
pages, and the ``lab`` management command. Importing this package does not import Spark."""
