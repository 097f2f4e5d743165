"""What a platform package needs to test itself, installed with synctool: ``check_platform(PLATFORM)`` calls
every hook as the core calls it, and ``synctool.testing.fixtures`` (a pytest plugin: ``pytest_plugins =
["synctool.testing.fixtures"]`` in the package's conftest) gives a test a synctool of its own with the fake CRM,
the receiver, drain and the CLI. ``docs/platforms.md`` walks through a package that uses them."""

from synctool.testing.conformance import Problems, check_platform, platform_site
from synctool.testing.references import hook_problems

__all__ = ["Problems", "check_platform", "deliver", "hook_problems", "platform_site"]


def __getattr__(name: str) -> object:
    if name == "deliver":  # from the fixtures module, which imports pytest: only when asked for
        from synctool.testing.fixtures import deliver

        return deliver
    raise AttributeError(name)
