"""The package version, defined once: `pyproject.toml` reads it (`[tool.setuptools.dynamic]`), the
server reports it (`/version`, `server.json`), and the SDK re-exports it as `mpijob.__version__`."""

__version__ = "0.1.0"
