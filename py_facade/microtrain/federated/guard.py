"""What the fleet's server accepts from a client (``server.guarded`` strategies use it).

A reply reaches a strategy only as the global model's own kind of data, so that no client can
make the aggregate non-finite, mis-shaped or its own:

* **arrays**: exactly one ArrayRecord, ``"arrays"``, holding exactly the global model's
  trained tensors (keys ``t<tensor index>``), each a numpy array of floats (no objects, no
  other serialization) of exactly the tensor's shape; it is cast to the model's dtype,
  float32, *first*, and then it must be finite (float64 1e300 becomes inf in float32 and
  is refused). The strategy then aggregates the cast float32 arrays.
* **metrics**: exactly one MetricRecord, ``"metrics"``, with exactly the keys a microtrain
  client sends (``TRAIN_METRICS`` / ``EVALUATE_METRICS``), every value a finite number.
* **num-examples** (the weight FedAvg and its kin give the reply): an integer from 1 to the
  number of rows the client's partition holds (the server knows the split), or to
  ``MAX_NUM_EXAMPLES`` for a client whose partition it does not know. So weights stay
  finite and bounded: no reply can zero the others' weights (1e308 twice) or dictate the
  average (1e308 once), and their sum, in float64, is exact. A client that lies within its
  own row count still weighs at most as an honest client of its size; strategies that
  resist lying clients (fedmedian, fedtrimmedavg, krum, multikrum, bulyan) are one
  ``--strategy`` away.

A reply that breaks a rule is refused with ``Refused(reason)``; the server drops that client
from the round, logs the reason and goes on with the others. ``client_reason`` turns the
error a failing client sent (Flower wraps an exception escaping a ClientApp in Ray's
traceback) into the client's own exception text.
"""

import re

import numpy as np

from flwr.app import Array, ArrayRecord, MetricRecord, RecordDict

from .. import _array_files
from .client import ARRAYS, EVALUATE_METRICS, METRICS, TRAIN_METRICS

# num-examples of a client whose partition the server does not know: the core's batch and
# row counts are int32, so no client trains on more rows in one round.
MAX_NUM_EXAMPLES = (1 << 31) - 1
_NUMPY_STYPE = "numpy.ndarray"


class Refused(ValueError):
    """A reply the server does not aggregate; the message is the reason."""


def _finite_number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and value == value and abs(value) != float("inf"))


def _tensor(key, array, shape):
    """The float32 array of one reply tensor, checked (see the module doc)."""
    if not isinstance(array, Array) or array.stype != _NUMPY_STYPE:
        raise Refused("tensor %s is not a numpy array (%s)"
                      % (key, getattr(array, "stype", type(array).__name__)))
    try:
        value = _array_files.npy_from_bytes(array.data, "tensor %s" % key)
    except ValueError as error:
        raise Refused(str(error))
    if value.dtype.kind != "f":
        raise Refused("tensor %s is %s; the model's tensors are float32" % (key, value.dtype))
    if tuple(value.shape) != tuple(shape):
        raise Refused("tensor %s has shape %s; the model's is %s"
                      % (key, tuple(value.shape), tuple(shape)))
    with np.errstate(over="ignore", invalid="ignore"):
        cast = np.ascontiguousarray(value, dtype=np.float32)  # the model's dtype first
    if not np.all(np.isfinite(cast)):
        where = int(np.flatnonzero(~np.isfinite(cast.reshape(-1)))[0])
        raise Refused("tensor %s is not finite in float32, the model's dtype (element %d: "
                      "%r as %s)" % (key, where, value.reshape(-1)[where].item(),
                                     value.dtype))
    return cast


def _metrics(content, names, rows):
    """The reply's MetricRecord, checked, with num-examples as an int."""
    records = dict(content.metric_records)
    if list(records) != [METRICS]:
        raise Refused("its reply holds metric records %s; a client sends one, %r"
                      % (sorted(records), METRICS))
    record = records[METRICS]
    if sorted(record.keys()) != sorted(names):
        raise Refused("its metrics are %s; a client sends %s"
                      % (", ".join(sorted(record.keys())) or "none", ", ".join(names)))
    values = {}
    for name in names:
        value = record[name]
        if not _finite_number(value):
            raise Refused("metric %s is %r, not a finite number" % (name, value))
        values[name] = value
    examples = values["num-examples"]
    bound = MAX_NUM_EXAMPLES if rows is None else int(rows)
    if examples != int(examples) or not 1 <= examples <= bound:
        held = "the %d rows its partition holds" % bound if rows is not None else \
            "%d (the server does not know its partition)" % bound
        raise Refused("num-examples is %r; it must be an integer from 1 to %s"
                      % (examples, held))
    values["num-examples"] = int(examples)
    return MetricRecord(values)


def checked_content(reply, layout, rows, train=True):
    """The RecordDict a strategy may aggregate in place of ``reply``'s content (see the
    module doc); ``layout``: [(key, shape)] of the global model's trained tensors (needed
    for train replies); ``rows``: the rows of the client's partition, or None."""
    if not reply.has_content():
        raise Refused("its reply is empty (neither content nor error)")
    content = reply.content
    metrics = _metrics(content, TRAIN_METRICS if train else EVALUATE_METRICS, rows)
    records = dict(content.array_records)
    if list(content.config_records):
        raise Refused("its reply holds config records %s; a client sends none"
                      % sorted(content.config_records))
    if not train:
        if records:
            raise Refused("its evaluation reply holds array records %s; it sends none"
                          % sorted(records))
        return RecordDict({METRICS: metrics})
    if list(records) != [ARRAYS]:
        raise Refused("its reply holds array records %s; a client sends one, %r"
                      % (sorted(records), ARRAYS))
    record = records[ARRAYS]
    expected = [key for key, _ in layout]
    extra = sorted(set(record.keys()) - set(expected))
    if extra:
        raise Refused("it sends tensor %s, which the model does not train" % ", ".join(extra))
    missing = [key for key in expected if key not in record]
    if missing:
        raise Refused("its update lacks tensor %s" % ", ".join(missing))
    tensors = {key: Array(_tensor(key, record[key], shape)) for key, shape in layout}
    return RecordDict({ARRAYS: ArrayRecord(tensors), METRICS: metrics})


def partition_id(reply, clients):
    """The partition a node says it holds (its reply to the server's query), or None when
    the reply is an error or not an integer from 0 to clients - 1: such a node's replies are
    then ordered last and bounded by MAX_NUM_EXAMPLES."""
    if reply.has_error() or not reply.has_content():
        return None
    record = reply.content.metric_records.get(METRICS)
    value = None if record is None else record.get("partition-id")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < clients:
        return None
    return value


def aggregate_problem(arrays, layout):
    """Why a strategy's aggregate cannot become the global model (not finite, not shaped
    like it), or None."""
    if arrays is None:
        return None
    for key, shape in layout:
        if key not in arrays:
            return "the aggregate lacks tensor %s" % key
        value = arrays[key].numpy()
        if tuple(value.shape) != tuple(shape):
            return "the aggregate's tensor %s has shape %s" % (key, tuple(value.shape))
        if not np.all(np.isfinite(value)):
            return "the aggregate's tensor %s is not finite" % key
    return None


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)"
                             r"|[A-Za-z_][\w.]*\.[A-Za-z_]\w*): (.*)$")
_WRAPPED = "The above exception was the direct cause of the following exception"
_FLOWER_MESSAGE = "ClientAppException occurred. Message: "
_LONGEST_REASON = 500


def client_reason(text):
    """A failing client's own words: the exception it raised, not the layers around it.

    An exception that escapes a ClientApp reaches the server as Flower's error reason
    ``<class 'ray.exceptions.RayTaskError(ClientAppException)'>:<'...'>``, Ray's traceback
    of Flower's ClientAppException wrapping the client's exception; that gives
    ``ZeroDivisionError: <its message>``. A reason a client wrote itself is kept (on one
    line, at most 500 characters)."""
    text = _ANSI.sub("", str(text))
    if _WRAPPED in text or _FLOWER_MESSAGE in text:
        original = text.split(_WRAPPED, 1)[0]
        for line in reversed(original.splitlines()):
            match = _EXCEPTION_LINE.match(line.strip()) if not line.startswith(" ") else None
            if match:
                return _one_line("%s: %s" % (match.group(1).rsplit(".", 1)[-1],
                                             match.group(2)))
        if _FLOWER_MESSAGE in text:
            message = text.rsplit(_FLOWER_MESSAGE, 1)[1]
            if message.endswith("'>"):
                message = message[:-2]
            return _one_line("the client raised: " + message)
    return _one_line(text)


def _one_line(text):
    text = " ".join(text.split())
    return text if len(text) <= _LONGEST_REASON else text[:_LONGEST_REASON - 3] + "..."
