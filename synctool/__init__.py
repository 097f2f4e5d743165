"""synctool: keeps a nonprofit's donor CRM in step with the platforms that bring it money and people."""

__version__ = "0.3.0"
