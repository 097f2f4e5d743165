"""The core's migrations, grouped by what they made (``core``: the first tables; ``features``: the tables later
features added; ``scale``: what keeps reads cheap at years of records). Their order is ``MIGRATIONS`` in
``store/migrations.py``."""
