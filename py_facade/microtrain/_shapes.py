"""How many elements a shape holds: the one product of dimensions that the runtime and the
model builder share (MicroPython-safe; ``nn/`` may import it, see tests/test_import_graph.py)."""


def element_count(dims):
    """The product of ``dims`` (1 for none: a scalar)."""
    count = 1
    for dim in dims:
        count *= dim
    return count
