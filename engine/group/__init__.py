"""Consumer groups: the client-side partition assignors (``assignors``), Java behaviours they
depend on (``java``), and the command line (``cli``: ``python -m engine assign``)."""
