"""edgemem: a private, on-device assistant with a long memory."""

__version__ = "0.1.0"
