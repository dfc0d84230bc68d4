"""An object the user names: an instance of its kind, or a name of ``ALIASES`` (case aside),
made with its defaults; losses.get and optimizers.get (MicroPython-safe)."""


def from_name(identifier, kind, aliases, what, expected):
    """``identifier`` if it is a ``kind``, else ``aliases[name]()``; ValueError names ``what``
    was asked for and the ``expected`` kind and names."""
    if isinstance(identifier, kind):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in aliases:
        return aliases[identifier.lower()]()
    raise ValueError("unknown %s %r; expected %s or one of %s"
                     % (what, identifier, expected, ", ".join(sorted(aliases))))
