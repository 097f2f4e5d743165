"""The sync rules. Importing this package registers every handler (see ``registry.py``)."""

from synctool.sync import audience, donations, mailing, portal, pos  # noqa: F401
