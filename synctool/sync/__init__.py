"""The sync rules. Importing this package registers every handler (see ``registry.py``)."""

from synctool.sync import donations, mailing, portal, pos  # noqa: F401
