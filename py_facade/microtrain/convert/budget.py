"""What evaluating a model's constant subgraphs may cost: a file of kilobytes must not cost
gigabytes, nor a loop on constants run for ever (docs/hostile_importers.md).

Both importers evaluate the ops whose inputs are all constants (shape arithmetic, a
weight's transpose, a Loop of a few iterations). A ``FoldBudget`` bounds that work by two
sums over one import, each checked *before* an op is evaluated, from its result's shape:

* bytes: the constants folding keeps (every folded tensor stays alive until the import
  ends) may total ``FLOOR_BYTES + FILE_FACTOR × file size``, at most ``MAX_BYTES``. A
  transient result (a loop body's) must fit in what is left.
* work: each evaluated op costs its elements read and written (a matrix product its
  multiply-adds; an op that onnx.reference runs element by element in Python, outputs ×
  inputs), plus a fixed cost per evaluation for the interpreter's own overhead; all
  evaluations of one import may cost ``MAX_WORK``.

Past either limit the import is refused with a ConversionError naming the op. The limits
are far above what real models fold (the largest fold of the test suite's models is a
weight's transpose: the file's own bytes) and far below what exhausts a host: a refused
file costs at most ~``MAX_BYTES`` and ~a second of evaluation.
"""

from .graph import ConversionError

FLOOR_BYTES = 64 << 20         # what any file may fold to, however small
FILE_FACTOR = 4                # int8 weights dequantized to float32 are 4x their bytes
MAX_BYTES = 1 << 30            # and never more than this
MAX_WORK = 1 << 28             # element operations (~0.3 s of numpy)
NODE_WORK = 1 << 12            # one op evaluated by numpy (~4 microseconds of interpreter)
REFERENCE_WORK = 1 << 17       # one op evaluated by onnx.reference (a model built, checked)
# How much of a graph is read at all (the core runs 256 ops of 256 tensors; constant
# subgraphs fold a few hundred nodes): nodes of an ONNX graph or subgraph, entries of a
# .tflite vector of tables (operators, tensors, buffers).
MAX_NODES = 1 << 16
MAX_TABLES = 1 << 16


def _mib(count):
    return "%.1f MiB" % (count / float(1 << 20))


class FoldBudget:
    """The bytes and work left for one import's constant folding (see the module doc)."""

    def __init__(self, file_bytes, max_bytes=None, max_work=MAX_WORK):
        if max_bytes is None:
            max_bytes = min(MAX_BYTES, FLOOR_BYTES + FILE_FACTOR * int(file_bytes))
        self.max_bytes = int(max_bytes)
        self.max_work = int(max_work)
        self.bytes_kept = 0
        self.work_done = 0

    def _refuse(self, label, what, limit_text):
        raise ConversionError("evaluating this op on constants would %s, past the import's "
                              "budget (%s; docs/hostile_importers.md)" % (what, limit_text),
                              op=label, supported="constant subgraphs whose results fit "
                              "the budget")

    def allow(self, label, result_bytes, work, overhead=NODE_WORK):
        """Refuse, before evaluating it, an op whose result of ``result_bytes`` does not fit
        in what is left or whose ``work`` (element operations) would exceed the work left;
        else count the work."""
        result_bytes, work = int(result_bytes), int(work) + int(overhead)
        left = self.max_bytes - self.bytes_kept
        if result_bytes > left:
            self._refuse(label, "produce %s" % _mib(result_bytes),
                         "%s of folded constants, %s of it left" % (_mib(self.max_bytes),
                                                                    _mib(max(left, 0))))
        if self.work_done + work > self.max_work:
            self._refuse(label, "take %d more element operations" % work,
                         "%d element operations in all, %d of them done"
                         % (self.max_work, self.work_done))
        self.work_done += work

    def keep(self, label, result_bytes):
        """Count a folded result that stays alive until the import ends."""
        result_bytes = int(result_bytes)
        if self.bytes_kept + result_bytes > self.max_bytes:
            self._refuse(label, "keep %s more" % _mib(result_bytes),
                         "%s of folded constants, %s kept already"
                         % (_mib(self.max_bytes), _mib(self.bytes_kept)))
        self.bytes_kept += result_bytes


SATURATED = 1 << 64  # more elements than any budget: counting stops there


def elements(shape):
    """The element count of ``shape`` as a Python int, saturated at SATURATED (a shape of
    a million dimensions of 2 must not cost a million-bit product), or a ConversionError
    for a negative dimension."""
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise ConversionError("shape %r has a negative dimension" % (dims[:8],))
    if 0 in dims:
        return 0
    total = 1
    for dim in dims:
        total *= dim
        if total >= SATURATED:
            return SATURATED
    return total
