"""The read path (MemFlow Algorithm 1): route, retrieve, pack, answer, validate."""
