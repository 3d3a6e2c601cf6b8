"""Models: the language model, the embedder, the scheduler that serialises calls to them."""
