"""Developer tools that check the package itself (``python -m edgemem.tools.imports``)."""
