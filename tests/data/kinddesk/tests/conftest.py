pytest_plugins = ["synctool.testing.fixtures"]
