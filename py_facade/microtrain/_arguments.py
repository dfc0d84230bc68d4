"""Values on the command lines of ``microtrain`` and its subcommands (CPython, argparse).

Each function here is an argparse ``type``: it turns the flag's text into a value or raises
``argparse.ArgumentTypeError`` saying what is expected, which the parser prints in its one
line after the flag's name ("argument --fraction: expected a number in (0, 1], got '2'").
So a value out of range is refused while the command line is parsed, before any file is
read or written. ``tools/cli_args.py``, ``tools/firmware.py``, ``tools/micropython.py``
and ``federated/fleet.py`` take their numbers, and the flags of what trains, from here;
docs/hostile_input.md lists the ranges.
"""

import argparse
import math

from . import trainable as _trainable


def _refuse(expected, text):
    return argparse.ArgumentTypeError("expected %s, got %r" % (expected, text))


def integer(low=None, high=None):
    """An argparse type for an integer in [low, high] (None: unbounded on that side)."""
    if low is not None and high is not None:
        expected = "an integer in %d..%d" % (low, high)
    elif low == 1:
        expected = "a positive integer"
    elif low is not None:
        expected = "an integer >= %d" % low
    else:
        expected = "an integer"

    def parse(text):
        try:
            value = int(text, 10)
        except (TypeError, ValueError):
            raise _refuse(expected, text)
        if (low is not None and value < low) or (high is not None and value > high):
            raise _refuse(expected, text)
        return value

    parse.__name__ = "integer"
    return parse


def number(low=None, high=None, low_open=False, high_open=False, expected=None):
    """An argparse type for a finite float in the interval from low to high, each end
    closed unless ``*_open`` (NaN and infinities are always refused)."""
    if expected is None:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        expected = "a number in %s%s, %s%s" % (left, "-inf" if low is None else "%g" % low,
                                               "inf" if high is None else "%g" % high, right)

    def parse(text):
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise _refuse(expected, text)
        if not math.isfinite(value):
            raise _refuse(expected, text)
        if low is not None and (value < low or (low_open and value == low)):
            raise _refuse(expected, text)
        if high is not None and (value > high or (high_open and value == high)):
            raise _refuse(expected, text)
        return value

    parse.__name__ = "number"
    return parse


positive_int = integer(1)
non_negative_int = integer(0)
positive_float = number(0.0, low_open=True, expected="a positive number")
non_negative_float = number(0.0, expected="a number >= 0")
# a share of something that must keep a part: validation splits
fraction = number(0.0, 1.0, high_open=True, expected="a number in [0, 1)")
# a share that must take someone: the clients sampled per round
share = number(0.0, 1.0, low_open=True, expected="a number in (0, 1]")


def index_list(text):
    """Comma-separated integers >= 0 ("0,3,7"); empty text is the empty list."""
    values = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            value = int(item, 10)
        except ValueError:
            raise _refuse("comma-separated integers >= 0 such as 0,3", text)
        if value < 0:
            raise _refuse("comma-separated integers >= 0 such as 0,3", text)
        values.append(value)
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError("%r names a client twice" % text)
    return values


def trainable_spec(text):
    """--trainable: all, bias, N (the last N layers with weights) or layers by position or
    name (``microtrain.trainable.parse_spec``)."""
    try:
        return _trainable.parse_spec(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error))


def add_trainable(parser):
    """The two flags of every command that trains (train, eval, info, firmware, fleet):
    --trainable, compile()'s choice, and onert_train's --num-of-trainable-ops (the last N
    ops); dest "trainable" and "num_trainable_ops", both None when not given
    (``trainable_choice`` checks them together)."""
    parser.add_argument("--trainable", type=trainable_spec, default=None,
                        help="what trains: all (default), bias, N (the last N layers with "
                             "weights), or layers by position (the layer column of "
                             "microtrain info) or name: 3,4 or dense_1")
    parser.add_argument("--num-of-trainable-ops", "--num_of_trainable_ops",
                        dest="num_trainable_ops", type=integer(-1), default=None,
                        help="onert_train's spelling: train the last N ops (-1 all, 0 none)")


def add_sparse_update(parser):
    """The flags that choose a sparse update (info, firmware): --budget B, a scheme
    ``microtrain.sparse_update`` picks under B arena bytes (by its heuristic, or by what each
    layer contributes on the rows of --calibration DATA.npz), or --trainable-scheme FILE, one
    saved as JSON (SparseScheme.to_json); dest "budget", "calibration" and
    "trainable_scheme"."""
    parser.add_argument("--budget", type=positive_int, default=None, metavar="BYTES",
                        help="train the sparse update microtrain.sparse_update picks for an "
                             "arena of at most BYTES (at --batch-size, --optimizer, --loss)")
    parser.add_argument("--trainable-scheme", "--trainable_scheme", dest="trainable_scheme",
                        default=None, metavar="SCHEME.json",
                        help="train this sparse scheme (JSON: SparseScheme.to_json, or "
                             "{layer: \"bias\" | \"all\" | channels | fraction})")
    parser.add_argument("--calibration", default=None, metavar="DATA.npz",
                        help="with --budget: choose the scheme by each layer's contribution "
                             "measured on these rows (arrays x and y, as --data's), "
                             "sparse_update(..., calibration=(x, y))")


def trainable_choice(trainable, num_trainable_ops):
    """(trainable, num_trainable_ops) for compile() from the two flags; ValueError when both
    were given."""
    if num_trainable_ops is not None and trainable is not None:
        raise ValueError("give --trainable or --num-of-trainable-ops, not both")
    return trainable, num_trainable_ops
