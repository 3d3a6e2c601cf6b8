"""The single SQLite file. All SQL lives in this package."""

from edgemem.store.db import Store, connect_driver

__all__ = ["Store", "connect_driver"]
