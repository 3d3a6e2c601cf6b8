"""The write path (DESIGN "Write path"): accept raw, build notes, then organise them."""
