"""The model builder (CPython, numpy): layers, ``Sequential`` / ``Model`` / ``Input`` and the
``.mtm`` image writer and reader. Nothing here runs a model: a built model is bytes that a
``Session`` (any backend) or a firmware loads."""
