"""``DataLoader``: batches of (inputs, expecteds) for ``TrainSession.train``.

    loader = DataLoader(x, y, batch_size=16, shuffle=True, seed=0)
    train, validation = loader.split(0.2)
    for x_batch, y_batch in train: ...

Sources: numpy arrays (or anything ``numpy.asarray`` takes), a list of arrays for
a model with several inputs, ``.npy`` files (memory-mapped, so only the rows of
a batch are read), and raw little-endian files as onert_train's
``--load_input:raw`` / ``--load_expected:raw`` read them (``load_raw`` /
``DataLoader.from_raw``: the file holds N samples of a given shape and dtype,
back to back, nothing else; one file per model input).

Batches: every batch has ``batch_size`` rows except perhaps the last, which has
the rest; it is never padded with repeated samples (the C core trains on the
valid rows exactly) and dropped only with ``drop_last=True``.

Order: with ``shuffle=True`` the order of epoch ``e`` is a permutation drawn
from (seed, e) by a portable generator (``microtrain._random``), so it is the
same on every run, on every machine, and after resuming at epoch ``e`` from a
checkpoint. ``seed=None`` takes the next seed derived from
``microtrain.set_seed`` (fresh entropy when no seed was set).

The batching logic (``batch_bounds``, ``split_counts``, the permutations) is
plain Python; without numpy the loader works on lists of rows (MicroPython).
"""

try:
    import numpy as _np
except ImportError:  # MicroPython: lists of rows
    _np = None

from . import _random

_SPLIT_STREAM = 0x5EED  # PCG32 stream of the train/validation split (epochs use 0..)


def batch_bounds(count, batch_size, drop_last=False):
    """[(start, stop), ...] covering 0..count-1 in batches of ``batch_size`` rows;
    the last batch is shorter unless ``drop_last`` drops it."""
    bounds = []
    start = 0
    while start < count:
        stop = start + batch_size
        if stop > count:
            if drop_last:
                break
            stop = count
        bounds.append((start, stop))
        start = stop
    return bounds


def split_counts(count, validation_split):
    """(train rows, validation rows) for a fraction in (0, 1): validation gets
    round(count * fraction) rows; each side must keep at least one row."""
    fraction = float(validation_split)
    if not 0.0 < fraction < 1.0:
        raise ValueError("validation_split must be in (0, 1), got %r" % (validation_split,))
    validation = int(count * fraction + 0.5)
    if validation < 1 or validation >= count:
        raise ValueError("validation_split %r of %d samples leaves %d for validation and %d "
                         "for training; each needs at least one"
                         % (validation_split, count, validation, count - validation))
    return count - validation, validation


def epoch_order(count, seed, epoch):
    """The shuffled row order of epoch ``epoch`` (a list of 0..count-1)."""
    return _random.permutation(count, seed, epoch)


def _is_path(value):
    if isinstance(value, str):
        return True
    try:
        import os
        return isinstance(value, os.PathLike)
    except (ImportError, AttributeError):
        return False


def load_raw(path, sample_shape, dtype="float32"):
    """Read a raw little-endian file of N samples of ``sample_shape`` and ``dtype``
    (onert_train's raw format) as a read-only memory-mapped array [N, *sample_shape]
    (``microtrain._array_files``: a regular file only)."""
    if _np is None:
        raise ImportError("load_raw needs numpy")
    from . import _array_files
    return _array_files.open_raw(path, sample_shape, dtype)


def load_array(source, what):
    """An array from an array-like or a ``.npy`` path (memory-mapped)."""
    if _is_path(source):
        import os
        path = os.fspath(source)
        if not path.endswith(".npy"):
            raise ValueError("%s: %s is not a .npy file; read raw files with "
                             "microtrain.data.load_raw(path, sample_shape, dtype) or "
                             "DataLoader.from_raw" % (what, path))
        from . import _array_files
        return _array_files.open_npy(path, what)
    if _np is None:
        return list(source)
    array = _np.asarray(source)
    if array.dtype == object:
        raise ValueError("%s has dtype object; give numbers" % what)
    return array


def _rows(array):
    return array.shape[0] if hasattr(array, "shape") else len(array)


def _take(array, rows):
    """Rows ``rows`` (a (start, stop) tuple or a list of indices) of ``array``."""
    if isinstance(rows, tuple):
        return array[rows[0]:rows[1]]
    if _np is not None and hasattr(array, "shape"):
        return array[_np.asarray(rows, dtype=_np.intp)]
    return [array[i] for i in rows]


class DataLoader:
    """Batches of (inputs, expecteds) over N samples.

    Args:
        inputs:     an array [N, ...], a list of arrays (one per model input) or paths of
                    ``.npy`` files
        expecteds:  the targets of model output 0 ([N, ...] rows or [N] int labels), a
                    ``.npy`` path, or None (prediction only: batches are (inputs, None))
        batch_size: rows per batch, >= 1
        shuffle:    draw a new order every epoch (reproducible, see the module doc)
        seed:       seed of the shuffles and of ``split``
        drop_last:  drop a last batch shorter than ``batch_size``
    """

    def __init__(self, inputs, expecteds=None, batch_size=16, shuffle=False, seed=None,
                 drop_last=False):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            try:
                import numpy
                ok = isinstance(batch_size, numpy.integer) and batch_size >= 1
            except ImportError:
                ok = False
            if not ok:
                raise ValueError("batch_size must be a positive integer, got %r"
                                 % (batch_size,))
        self.multi_input = isinstance(inputs, (list, tuple)) and len(inputs) > 0 and all(
            _is_path(a) or hasattr(a, "shape") for a in inputs)
        sources = list(inputs) if self.multi_input else [inputs]
        self.inputs = [load_array(a, "input %d" % i) for i, a in enumerate(sources)]
        self.expecteds = None if expecteds is None else load_array(expecteds, "expecteds")
        count = _rows(self.inputs[0])
        for position, array in enumerate(self.inputs):
            if _rows(array) != count:
                raise ValueError("input %d has %d samples, input 0 has %d"
                                 % (position, _rows(array), count))
        if self.expecteds is not None and _rows(self.expecteds) != count:
            raise ValueError("%d input samples but %d expected samples"
                             % (count, _rows(self.expecteds)))
        if count < 1:
            raise ValueError("a DataLoader needs at least one sample")
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        seed = _random.check_seed(seed)
        self.seed = _random.derive_seed() if seed is None else seed
        self.epoch = 0
        self._indices = None  # None: rows 0..count-1 of the arrays; else a list of row numbers
        self._count = count

    @classmethod
    def from_raw(cls, input_files, input_shapes, expected_file=None, expected_shape=None,
                 input_dtype="float32", expected_dtype="float32", **options):
        """A loader over raw files (onert_train's format). ``input_files``/``input_shapes``:
        a path and one sample's shape, or lists of them for several inputs."""
        several = isinstance(input_files, (list, tuple))
        files = list(input_files) if several else [input_files]
        shapes = list(input_shapes) if several else [input_shapes]
        if len(files) != len(shapes):
            raise ValueError("%d input files but %d input shapes" % (len(files), len(shapes)))
        arrays = [load_raw(f, s, input_dtype) for f, s in zip(files, shapes)]
        expecteds = None
        if expected_file is not None:
            if expected_shape is None:
                raise ValueError("expected_shape is needed with expected_file")
            expecteds = load_raw(expected_file, expected_shape, expected_dtype)
        return cls(arrays if several else arrays[0], expecteds, **options)

    # -------------------------------------------------------------- structure

    def __len__(self):
        """Batches per epoch."""
        return len(batch_bounds(self._count, self.batch_size, self.drop_last))

    @property
    def num_samples(self):
        """How many rows the loader holds (before batching; ``len()`` is the batches)."""
        return self._count

    def _subset(self, indices):
        # a new loader over the same arrays (no __new__ / __dict__ tricks: MicroPython lacks them)
        loader = DataLoader(self.inputs if self.multi_input else self.inputs[0], self.expecteds,
                            batch_size=self.batch_size, shuffle=self.shuffle, seed=self.seed,
                            drop_last=self.drop_last)
        base = self._indices
        loader._indices = list(indices) if base is None else [base[i] for i in indices]
        loader._count = len(loader._indices)
        loader.epoch = 0
        return loader

    def split(self, validation_split):
        """(train loader, validation loader). Without shuffle the validation part is the
        last round(N * validation_split) samples (as Keras and onert_train take it);
        with shuffle it is drawn from the seed. The validation loader never shuffles."""
        train_count, _ = split_counts(self._count, validation_split)
        if self.shuffle:
            order = _random.permutation(self._count, self.seed, _SPLIT_STREAM)
        else:
            order = list(range(self._count))
        train = self._subset(order[:train_count])
        validation = self._subset(order[train_count:])
        validation.shuffle = False
        validation.drop_last = False
        return train, validation

    def set_epoch(self, epoch):
        """Make the next iteration use epoch ``epoch``'s order (train() calls this with
        the session's epoch counter, so a resumed run sees the same orders)."""
        self.epoch = int(epoch)

    # -------------------------------------------------------------- batches

    def _row_plan(self, shuffle):
        if shuffle:
            order = epoch_order(self._count, self.seed, self.epoch)
            if self._indices is not None:
                order = [self._indices[i] for i in order]
            return [order[a:b] for a, b in batch_bounds(self._count, self.batch_size,
                                                         self.drop_last)]
        bounds = batch_bounds(self._count, self.batch_size, self.drop_last)
        if self._indices is None:
            return bounds  # contiguous slices: views, no copy
        return [self._indices[a:b] for a, b in bounds]

    def _batch(self, rows):
        inputs = [_take(array, rows) for array in self.inputs]
        expecteds = None if self.expecteds is None else _take(self.expecteds, rows)
        return (inputs if self.multi_input else inputs[0]), expecteds

    def batches(self, shuffle=None):
        """Yield (inputs, expecteds) for one epoch; ``shuffle=False`` forces data order.
        A shuffled pass advances the epoch counter."""
        use_shuffle = self.shuffle if shuffle is None else (bool(shuffle) and self.shuffle)
        plan = self._row_plan(use_shuffle)
        if use_shuffle:
            self.epoch += 1
        for rows in plan:
            yield self._batch(rows)

    def __iter__(self):
        return self.batches()

    def __repr__(self):
        return "DataLoader(%d samples, batch_size=%d, shuffle=%r, drop_last=%r)" % (
            self._count, self.batch_size, self.shuffle, self.drop_last)
