"""The ``microtrain`` command (also ``python -m microtrain``).

    microtrain train MODEL --load-input:raw X.bin --load-expected:raw Y.bin --epochs 5 \\
        --batch-size 10 --optimizer adam --loss cce --learning-rate 0.01 \\
        --validation-split 0.2 --metric categorical_accuracy --num-of-trainable-ops -1 \\
        --checkpoint CK [--load-checkpoint CK] [--export OUT.mtm]
    microtrain eval MODEL --load-input:raw X.bin --load-expected:raw Y.bin [--load-checkpoint CK]
        (with a checkpoint, its optimizer and trained set unless given)
    microtrain info MODEL [--batch-size 16 --optimizer adam --loss cce --trainable 2]
        [--proximal-mu 0.01] [--plot arena.png]
        [--budget BYTES [--calibration DATA.npz] | --trainable-scheme SCHEME.json]   (a sparse
        update; --calibration: chosen by what each layer contributes on those rows)
    microtrain info CK                 (what a checkpoint holds)
    microtrain predict MODEL --load-input:raw X.bin [--output Y.npy]   (no training set-up)
    microtrain firmware ...            (board support, microtrain.tools.firmware)
    microtrain micropython ...         (a script on MicroPython firmware, .tools.micropython)
    microtrain fleet ...               (Flower: a simulated fleet, or --deployment)

Defaults are compile()'s (SGD, MSE, batch 16) and loss names are ``microtrain.losses``'
(mse, mae, cce, scce, bce or full names). Flags follow onert_train (``--load_input:raw``, ``--batch_size``, ``--epoch``,
``--num_of_trainable_ops``, numeric ``--loss 1|2`` and ``--optimizer 1|2`` codes of
nnfw's enums, ``--metric 0``) and accept friendlier spellings (``--load-input``,
``--x``, ``--epochs``, ``--loss cce``, ...). Raw files are little-endian samples back
to back: float32 rows shaped like model input/output, or int32 labels for sparse
categorical cross-entropy; ``.npy`` files work too. The output copies onert_train's
layout: the training parameters, one line per epoch, then phase timings.

Any mistake in the arguments or the files ends with one line on stderr and a
non-zero exit status (2 for usage errors, 1 for the rest); never a traceback
(set MICROTRAIN_DEBUG=1 to see one).
"""

import os
import sys
import time

import numpy as np

from .. import _arguments, _array_files, _files, checkpoint_info as _checkpoint_info
from .. import config as _config, data as _data, losses as _losses, ops as _ops
from .. import optimizers as _optimizers
from ..errors import MicrotrainError
from ..nn import image as _image
from . import arena as _arena, sparse_update as _sparse_update
from .cli_args import PROG, UsageError, build_parser

_DTYPE_NAMES = {_image.DTYPE_F32: "f32", _image.DTYPE_I32: "i32", _image.DTYPE_I8: "i8"}


# ---------------------------------------------------------------- helpers


def _opened(path, what, opener):
    """``opener()``, which opens ``path`` through microtrain._files (regular files only,
    refused before a byte is read), with its refusals worded for the command line."""
    try:
        return opener()
    except FileNotFoundError:
        raise OSError("%s file not found: %s" % (what, path))
    except IsADirectoryError:
        raise OSError("%s %s is a directory, not a file" % (what, path))
    except _files.NotARegularFileError as error:
        raise OSError("%s %s is %s, not a regular file" % (what, path, error.kind))
    except OSError as error:
        raise OSError("%s file %s cannot be read: %s" % (what, path, error.strerror or error))


def _model_path(args):
    if args.model and args.modelfile and args.model != args.modelfile:
        raise UsageError("give the model once (MODEL or --modelfile)")
    path = args.model or args.modelfile
    if not path:
        raise UsageError("%s %s: a MODEL is required" % (PROG, args.command))
    return _opened(path, "model", lambda: _files.require_regular(path, "a model image"))


def _model(path):
    """The .mtm image at ``path`` (bytes), or the ``ConvertedModel`` of a .tflite/.circle/
    .onnx file (which keeps the file's layer names and what export needs); read as every
    user's file is (microtrain._files: regular files only)."""
    data = _opened(path, "model", lambda: _files.read_file(path, "a model image"))
    from ..convert import convert, detect_format
    fmt = detect_format(data, path)
    if fmt is not None:
        return convert(data, format=fmt, source_path=path)
    return data


def _checkpoint_summary(path):
    """What the checkpoint at ``path`` holds (checkpoint_info.read_summary)."""
    handle, size = _opened(path, "checkpoint",
                           lambda: _files.open_regular(path, "a checkpoint"))
    with handle:
        def read(offset, count):
            handle.seek(offset)
            return handle.read(count)

        try:
            return _checkpoint_info.read_summary(read, size)
        except ValueError as error:
            raise ValueError("checkpoint %s: %s" % (path, error))


def _checkpoint_layers(session, summary):
    """(layer positions, biases_only) whose training gives exactly the checkpoint's trained
    tensors: what an evaluation compiles so that the checkpoint fits without the training
    flags it was saved with."""
    wanted = [index for index, _ in summary["records"]]
    parsed = _image.read_image(session.model_image)
    layer_of = [op["layer"] for op in session.model_description()["ops"]]
    layers = sorted({layer_of[number] for number, op in enumerate(parsed.ops)
                     if any(i in wanted for i in op.inputs if i is not None)})
    biases_only = all(len(parsed.tensors[i].dims) == 1 for i in wanted) and \
        any(len(parsed.tensors[i].dims) > 1 for number, op in enumerate(parsed.ops)
            if layer_of[number] in layers for i in op.inputs
            if i is not None and parsed.tensors[i].flags & _image.FLAG_TRAINABLE)
    return layers, biases_only


def _open_session(args, checkpoint=None):
    """The session of the command's model, compiled from its flags; ``checkpoint`` (a
    summary) fills in the optimizer and the trained set when the flags do not give them."""
    from ..train_session import TrainSession
    path = _model_path(args)
    session = TrainSession(_model(path))
    try:
        trainable, num_trainable_ops = _arguments.trainable_choice(args.trainable,
                                                                   args.num_trainable_ops)
    except ValueError as error:
        raise UsageError(str(error))
    biases_only = args.biases_only
    name = args.optimizer or _config.DEFAULT_OPTIMIZER
    if checkpoint is not None:
        if args.optimizer is None:
            name = checkpoint["optimizer"]
        if args.trainable is None and args.num_trainable_ops is None:
            trainable, fit_biases = _checkpoint_layers(session, checkpoint)
            biases_only = biases_only or fit_biases
    optimizer = _optimizers.get(name)
    if checkpoint is not None and args.optimizer is None and checkpoint["state_arrays"] == 1:
        optimizer = _optimizers.SGD(momentum=0.9)  # any momentum keeps the state's size
    if args.learning_rate is not None:
        config = optimizer.get_config()
        config["learning_rate"] = args.learning_rate
        optimizer = type(optimizer)(**config)
    loss = _losses.get(args.loss)
    loss = type(loss)(reduction=args.reduction)
    metrics = [m for m in (getattr(args, "metrics", None) or []) if m is not None]
    try:  # info's --budget / --trainable-scheme: a sparse update
        args.scheme = _sparse_update.scheme_from_flags(
            session, getattr(args, "budget", None), getattr(args, "trainable_scheme", None),
            args.trainable, args.num_trainable_ops, args.batch_size, optimizer, loss,
            getattr(args, "calibration", None))
    except ValueError as error:
        session.close()
        raise UsageError(str(error))
    trainable = trainable if args.scheme is None else args.scheme
    try:
        session.compile(optimizer, loss, metrics=metrics, batch_size=args.batch_size,
                        trainable=trainable, num_trainable_ops=num_trainable_ops,
                        biases_only=biases_only,
                        accumulate_gradients=getattr(args, "accumulate_gradients", False),
                        proximal_mu=getattr(args, "proximal_mu", 0.0))
    except ValueError as error:
        if str(error).startswith("trainable"):  # say which flag it was
            raise ValueError("--%s" % error)
        raise
    return path, session, optimizer, loss


def _read_file(path, sample_shape, dtype, what):
    if path.endswith(".npy"):
        array = _opened(path, what, lambda: _array_files.open_npy(path, what))
        width = int(np.prod(sample_shape, dtype=np.int64))
        if len(sample_shape) > 1 and array.ndim == 2 and array.shape[1] == width:
            array = array.reshape((len(array),) + tuple(sample_shape))  # flat rows, as raw
        if tuple(array.shape[1:]) != tuple(sample_shape):
            raise ValueError("%s %s holds samples of shape %s, the model needs %s"
                             % (what, path, tuple(array.shape[1:]), tuple(sample_shape)))
        return array
    try:
        return _opened(path, what, lambda: _array_files.open_raw(path, sample_shape, dtype,
                                                                  what))
    except ValueError as error:
        raise ValueError("%s %s" % (what, error))


def _expected_hint(path, samples):
    """Why an expected file does not fit float rows: integer labels, said plainly."""
    if not path.endswith(".npy") and os.path.getsize(path) == 4 * samples:
        return ("; it holds one 4-byte value per input sample: if those are integer class "
                "labels, use --loss scce (sparse categorical cross-entropy)")
    return ""


def _check_labels(labels, classes, path):
    """Labels out of [0, classes): say when the file holds float32 class numbers instead."""
    labels = np.asarray(labels)
    bad = (labels < 0) | (labels >= classes)
    if not bad.any():
        return
    as_float = labels.astype("<i4").view("<f4")
    if np.all(np.isfinite(as_float)) and np.all(as_float == np.round(as_float)) and \
            as_float.min() >= 0 and as_float.max() < classes:
        raise ValueError("%s holds float32 values (%s...); sparse categorical cross-entropy "
                         "takes int32 labels: write them with labels.astype('<i4').tofile()"
                         % (path, ", ".join("%g" % v for v in as_float[:3])))
    raise ValueError("%s: labels must lie in [0, %d), got values from %d to %d"
                     % (path, classes, int(labels.min()), int(labels.max())))


def _input_arrays(args, session):
    """One float32 array of samples per model input, from the --load-input files"""
    inputs = session.get_inputs_tensorinfo()
    if len(args.inputs) != len(inputs):
        raise UsageError("the model has %d input(s), got %d --load-input file(s)"
                         % (len(inputs), len(args.inputs)))
    return [_read_file(path, info["shape"][1:], "<f4", "input")
            for path, info in zip(args.inputs, inputs)]


def _loader(args, session, loss, shuffle=False, seed=None):
    arrays = _input_arrays(args, session)
    output = session.get_outputs_tensorinfo()[0]
    if loss.sparse_labels:
        expected = _read_file(args.expected, (), "<i4", "expected")
        _check_labels(expected, output["shape"][-1], args.expected)
    else:
        try:
            expected = _read_file(args.expected, output["shape"][1:], "<f4", "expected")
        except ValueError as error:
            raise ValueError(str(error) + _expected_hint(args.expected, len(arrays[0])))
    count = min([len(a) for a in arrays] + [len(expected)])
    if any(len(a) != len(expected) for a in arrays):
        raise ValueError("the input file(s) hold %s samples but the expected file holds %d"
                         % ("/".join(str(len(a)) for a in arrays), len(expected)))
    if args.data_length is not None:
        if args.data_length > count:
            raise ValueError("--data-length %d exceeds the %d samples in the files"
                             % (args.data_length, count))
        count = args.data_length
        arrays = [a[:count] for a in arrays]
        expected = expected[:count]
    return _data.DataLoader(arrays if len(arrays) > 1 else arrays[0], expected,
                            batch_size=args.batch_size, shuffle=shuffle, seed=seed)


def _print_parameters(args, session, optimizer, loss):
    print("== training parameter ==")
    print("- learning_rate        = %g" % session.get_learning_rate())
    print("- batch_size           = %d" % session.batch_size)
    print("- loss_info            = {loss = %s, reduction = %s}" % (loss.name, loss.reduction))
    print("- optimizer            = %s" % optimizer.name)
    print("- num_of_trainable_ops = %s" % session.trainable_description())
    print("========================")


def _print_phases(timings, execute_ms, epochs):
    print("===================================")
    print("MODEL_LOAD   takes %.4f ms" % timings["model_load_ms"])
    print("PREPARE      takes %.4f ms" % timings["compile_ms"])
    print("EXECUTE      takes %.4f ms" % execute_ms)
    for epoch, ms in zip(epochs, timings.get("epoch_ms", [])):
        print("- Epoch %-6d takes %.4f ms" % (epoch, ms))
    print("===================================")


# ---------------------------------------------------------------- commands


def _outputs(*paths):
    """The output files of a command, checked before its work (microtrain._files)."""
    for path in paths:
        if path:
            _files.check_writable(path)


def run_train(args):
    _outputs(args.export, args.checkpoint)
    path, session, optimizer, loss = _open_session(args)
    with session:
        loader = _loader(args, session, loss, shuffle=args.shuffle, seed=args.seed)
        if args.load_checkpoint:
            session.load_checkpoint(args.load_checkpoint)
        print("Model Filename %s" % path)
        _print_parameters(args, session, optimizer, loss)
        history = session.train(loader, epochs=args.epochs,
                                validation_split=args.validation_split,
                                checkpoint_path=args.checkpoint, verbose=args.verbose,
                                line_format="onert_train")
        if args.export:
            session.export_model_for_inference(args.export)
            print("exported %s" % args.export)
        _print_phases(history.timings, history.timings["total_ms"], history.epochs)
    return 0


def run_eval(args):
    # evaluation updates nothing: a checkpoint's optimizer and trained set need no flags
    summary = _checkpoint_summary(args.load_checkpoint) if args.load_checkpoint else None
    path, session, optimizer, loss = _open_session(args, summary)
    with session:
        loader = _loader(args, session, loss)
        if args.load_checkpoint:
            session.load_checkpoint(args.load_checkpoint)
        start = time.perf_counter()
        logs = session.evaluate(loader)
        execute_ms = (time.perf_counter() - start) * 1000.0
        parts = ["loss: [0] %.4f" % logs["loss"]]
        parts += ["%s: [0] %.4f" % (name, value) for name, value in logs.items()
                  if name != "loss"]
        print("Evaluate %d samples - %s" % (loader.num_samples, " - ".join(parts)))
        _print_phases(session.timings, execute_ms, [])
    return 0


def run_predict(args):
    from ..train_session import TrainSession
    _outputs(args.output)
    path = _model_path(args)
    with TrainSession(path) as session:
        arrays = _input_arrays(args, session)
        if len({len(a) for a in arrays}) != 1:
            raise ValueError("the input files hold %s samples"
                             % "/".join(str(len(a)) for a in arrays))
        start = time.perf_counter()
        outputs = session.predict(arrays if len(arrays) > 1 else arrays[0],
                                  batch_size=args.batch_size)
        execute_ms = (time.perf_counter() - start) * 1000.0
        first = outputs[0] if isinstance(outputs, list) else outputs
        if args.output:  # atomically, over a regular file only (microtrain._files)
            if args.output.endswith(".npy"):
                _files.atomic_write(args.output, lambda writer: np.save(writer, first))
            else:
                _files.write_bytes(args.output, np.ascontiguousarray(first, "<f4").tobytes())
            print("wrote output 0 of %d samples, shape %s, to %s"
                  % (len(first), tuple(first.shape), args.output))
        else:
            rows = first.reshape(len(first), -1)
            for index, row in enumerate(rows):
                text = " ".join("%.6g" % v for v in row)
                if row.size > 1:
                    text = "class %d - %s" % (int(row.argmax()), text)
                print("%d: %s" % (index, text))
        print("Predict %d samples in %.3f ms (batch %d, model %s)"
              % (len(first), execute_ms, session.batch_size, path))
    return 0


def _table(headers, rows):
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(str(c))) for w, c in zip(widths, row)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def _flags_text(flags):
    names = [(_image.FLAG_INPUT, "input"), (_image.FLAG_OUTPUT, "output"),
             (_image.FLAG_CONST, "const"), (_image.FLAG_TRAINABLE, "trainable"),
             (_image.FLAG_MASTER, "master")]
    return ",".join(name for bit, name in names if flags & bit) or "activation"


def run_info(args):
    _outputs(args.plot)
    path = _model_path(args)
    handle, _ = _opened(path, "model", lambda: _files.open_regular(path, "a model image"))
    with handle:
        checkpoint = _checkpoint_info.is_checkpoint(handle.read(4))
    if checkpoint:
        print("%s: %s" % (path, "\n".join(_checkpoint_info.describe(_checkpoint_summary(path)))))
        return 0
    path, session, optimizer, loss = _open_session(args)
    with session:
        parsed = _image.read_image(session.model_image)
        trained = session.trained_tensors()
        print("model %s: %d bytes, %d tensors, %d ops, %d inputs, %d outputs"
              % (path, parsed.header.image_bytes, len(parsed.tensors), len(parsed.ops),
                 len(parsed.inputs), len(parsed.outputs)))
        producers = {}
        for index, op in enumerate(parsed.ops):
            for output in op.outputs:
                producers[output] = index
        rows = []
        for tensor in parsed.tensors:
            count = 1
            for dim in tensor.dims:
                count *= dim
            rows.append((tensor.index, _DTYPE_NAMES.get(tensor.dtype, tensor.dtype),
                         "x".join(str(d) for d in tensor.dims), count,
                         _flags_text(tensor.flags), producers.get(tensor.index, "-"),
                         "yes" if tensor.index in trained else "-"))
        print("\nTensors")
        print(_table(("index", "dtype", "shape", "elements", "flags", "producer", "trained"),
                     rows))
        rows = []
        layers = [op["layer"] for op in session.model_description()["ops"]]
        for index, op in enumerate(parsed.ops):
            weights = [i for i in op.inputs if i is not None
                       and parsed.tensors[i].flags & _image.FLAG_CONST]
            trains = [i for i in weights if i in trained]
            rows.append((index, layers[index], _ops.display_name(op.op_type),
                         ",".join("-" if i is None else str(i) for i in op.inputs),
                         ",".join(str(o) for o in op.outputs),
                         ",".join(str(i) for i in trains) or "-"))
        print("\nOps (compile(trainable=[...]) and --trainable take layer indices)")
        print(_table(("index", "layer", "type", "inputs", "outputs", "trained weights"), rows))
        source = getattr(session, "_source", None)
        if source is not None and getattr(source, "operators", None):
            _print_source(source, session.layers, parsed, trained)
        plan = session.memory_plan()
        print("\nMemory plan (batch %d, %s, %s, trainable: %s)"
              % (session.batch_size, optimizer.name, loss.name,
                 session.trainable_description()))
        roles = [("metadata", "metadata_bytes"), ("trained weights", "weight_bytes"),
                 ("gradients", "gradient_bytes"), ("optimizer state", "optimizer_bytes"),
                 ("activations", "activation_bytes"),
                 ("activation gradients", "activation_grad_bytes"), ("targets", "io_bytes"),
                 ("scratch", "scratch_bytes")]
        rows = [(label, plan[key]) for label, key in roles]
        if plan.get("reference_bytes"):  # FedProx's copy of the trained weights
            rows.insert(4, ("proximal reference", plan["reference_bytes"]))
        summary = _arena.summary(plan)
        rows.append(("shared lifetimes", -summary["reuse"]))  # the reuse
        rows.append(("total", summary["total"]))
        rows.append(("lower bound (most bytes live at once)", summary["lower_bound"]))
        if plan.get("int8_activation_bytes"):  # the frozen int8 part's working set
            rows.append(("of which int8 activations, at most", plan["int8_activation_bytes"]))
        if plan.get("over_inputs"):  # their outputs over the inputs they consume
            rows.append(("int8 convolutions laid over their inputs", plan["over_inputs"]))
        rows.append(("ratio total / lower bound", "%.3f" % summary["ratio"]))
        rows.append(("update mode", summary["update"]))
        if plan.get("tiled_updates"):
            rows.append(("weights updated in tiles", plan["tiled_updates"]))
            rows.append(("largest tile", plan["weight_tile_bytes"]))
        print(_table(("role", "bytes"), rows))
        print("update mode %s: %s" % (summary["update"], {
            "fused": "each weight is updated as soon as its gradient is complete",
            "fused, tiled": "each weight is updated as soon as its gradient is complete; "
                            "the largest, a block of output rows at a time (one tile of "
                            "gradient, the same bits)",
            "accumulate": "gradients are kept until the optimizer step"}[summary["update"]]))
        print("trained tensors: %d; backward stops at op %d"
              % (plan["num_trained_params"], plan["first_trained_op"]))
        if "layers" in plan:  # a sparse update: what each layer trains and costs
            print("\nSparse update%s" % ("" if args.budget is None else
                                          " (budget %d bytes)" % args.budget))
            print(_table(("layer", "trains", "bytes"), [
                (row["label"], row["trains"], "-" if row["bytes"] is None else row["bytes"])
                for row in plan["layers"]]))
            print("scheme: %s" % args.scheme)
        if args.plot:
            from . import arena_plot
            arena_plot.save(session, args.plot)
            print("arena plot: %s" % args.plot)
    return 0


def _print_source(source, layers, parsed, trained):
    """The imported file's operators: index, name, type, the layer each became and what it
    is in the image (int8 frozen, float, trained, evaluated at import)."""
    layer_of = {}
    for number, layer in enumerate(layers):
        for op in getattr(layer, "source_ops", ()):
            layer_of[op] = (number, layer)
    int8 = source.int8 or {}
    kept = set(int8.get("kept_ops", ()))
    rows = []
    for entry in source.operators:
        index = entry["index"]
        number, layer = layer_of.get(index, ("-", None))
        if layer is None:
            part = "cut (new head)" if int8.get("cut_after") is not None and \
                index > int8["cut_after"] else "evaluated at import"
        else:
            weights = [i for op in layer for i in parsed.ops[op].inputs
                       if i is not None and parsed.tensors[i].flags & _image.FLAG_TRAINABLE]
            part = "int8, frozen" if index in kept else "float"
            if weights:
                part += ", trained" if any(i in trained for i in weights) else ", weights frozen"
        rows.append((index, entry["name"], entry["type"], number, part))
    for number, layer in enumerate(layers):  # layers the import created (a new head)
        if getattr(layer, "source_op", 1) is None:
            rows.append(("-", layer.name, layer.type, number, "float (new head)"))
    print("\nOperators of the %s file (compile(trainable=[...]) takes layers by position or "
          "name%s)" % (source.format.split("-")[0], "; convert(..., train_from=...) takes "
                       "an operator's index or name: where the float part begins"
                       if source.int8 is not None else ""))
    print(_table(("op", "name", "type", "layer", "in the image"), rows))
    for note in source.notes:
        print("note: %s" % note)


def _firmware(argv):
    try:
        from . import firmware
    except ImportError as error:
        if getattr(error, "name", None) == __package__ + ".firmware":
            _error("firmware support is not available: this installation has no "
                   "microtrain.tools.firmware module")
        else:
            _error("microtrain.tools.firmware could not be imported: %s" % _one_line(error))
        return 2
    return int(firmware.main(list(argv)) or 0)


def _fleet(argv):
    try:
        if "--deployment" in argv:  # Flower's deployment engine, the same command line
            from ..federated import deployment as fleet
        else:
            from ..federated import fleet  # Flower itself is imported (and checked) by main()
    except ImportError as error:
        _error("microtrain.federated could not be imported: %s" % _one_line(error))
        return 2
    return int(fleet.main(list(argv)) or 0)


# ---------------------------------------------------------------- entry point


def _one_line(error):
    if isinstance(error, OSError) and error.strerror:
        text = "%s: %s" % (error.strerror, error.filename) if error.filename and \
            str(error.filename) not in error.strerror else error.strerror
    elif isinstance(error, KeyError) and error.args:
        text = str(error.args[0])
    else:
        text = str(error) or type(error).__name__
    return " ".join(text.split())


def _error(message):
    sys.stderr.write("%s: error: %s\n" % (PROG, message))
    sys.stderr.flush()


def main(argv=None):
    """Run the command line ``argv`` (default sys.argv[1:]); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "firmware":
            return _firmware(argv[1:])
        if argv and argv[0] == "convert":
            from ..convert import cli as convert_cli
            return int(convert_cli.main(argv[1:]) or 0)
        if argv and argv[0] == "fleet":  # a simulated fleet with Flower (microtrain[federated])
            return _fleet(argv[1:])
        if argv and argv[0] == "micropython":  # runs a script on MicroPython firmware
            from . import micropython
            return int(micropython.main(argv[1:]) or 0)
        parser = build_parser()
        if not argv:
            raise UsageError("a command is required: train, eval, predict, info, convert, "
                             "firmware, micropython or fleet (usage: %s COMMAND ...; see %s --help)"
                             % (PROG, PROG))
        args = parser.parse_args(argv)
        handler = {"train": run_train, "eval": run_eval, "info": run_info,
                   "predict": run_predict}[args.command]
        return int(handler(args) or 0)
    except UsageError as error:
        _error(_one_line(error))
        return 2
    except SystemExit as exit_:  # --help, or a firmware command that exits
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except (MicrotrainError, ValueError, TypeError, OSError, RuntimeError, KeyError) as error:
        if os.environ.get("MICROTRAIN_DEBUG"):
            raise
        _error(_one_line(error))
        return 1
    except Exception as error:  # noqa: BLE001 - the promise is: no traceback
        if os.environ.get("MICROTRAIN_DEBUG"):
            raise
        _error("internal error (%s): %s; set MICROTRAIN_DEBUG=1 for a traceback"
               % (type(error).__name__, _one_line(error)))
        return 1


if __name__ == "__main__":
    sys.exit(main())
