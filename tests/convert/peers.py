"""The peer runtimes the converter tests compare with: LiteRT (ai-edge-litert), ONNX
Runtime and onert's experimental training API, each behind a small function."""

import contextlib
import io
import os
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
# MLPerf Tiny's reference files live with the examples, which the docs use too
MLPERF_TINY = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "models",
                           "mlperf_tiny")
RTOL = 1e-5
ATOL = 1e-6


def fixture(name):
    return os.path.join(FIXTURES, name)


def sessions_of_path_and_bytes(name):
    """(bytes of the fixture ``name``, a session opened from its path, one from its bytes),
    their weights asserted equal"""
    import microtrain
    path = fixture(name)
    with open(path, "rb") as handle:
        data = handle.read()
    by_path, by_bytes = microtrain.TrainSession(path), microtrain.TrainSession(data)
    for a, b in zip(by_path.get_weights(), by_bytes.get_weights()):
        np.testing.assert_array_equal(a, b)
    return data, by_path, by_bytes


def fixtures(extension):
    return sorted(n for n in os.listdir(FIXTURES) if n.endswith(extension))


def run_litert(model, x, reference=False):
    """Output 0 of a .tflite/.circle-free TFLite model (path or bytes) on batch ``x`` (cast
    to the input's type: float32, or int8 values for an int8 input); ``reference`` picks the
    BUILTIN_REF kernels instead of the default (XNNPACK)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    kwargs = {"model_path": model} if isinstance(model, str) else {"model_content": model}
    if reference:
        kwargs["experimental_op_resolver_type"] = OpResolverType.BUILTIN_REF
    interpreter = Interpreter(**kwargs)
    detail = interpreter.get_input_details()[0]
    interpreter.resize_tensor_input(detail["index"], x.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(detail["index"], np.ascontiguousarray(x, detail["dtype"]))
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def run_onnxruntime(model, x):
    import onnxruntime
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: np.ascontiguousarray(x)})[0]


def microtrain_infer(model, x, weights=None):
    """Output 0 of a ConvertedModel on ``x`` in the source's layout (as the peer takes
    it), from the C core."""
    import microtrain
    with microtrain.TrainSession(model.to_bytes()) as session:
        session.compile("sgd", "mse", batch_size=x.shape[0])
        if weights is not None:
            session.set_weights(weights)
        output, = session.infer(x)
        return output.copy()


def max_relative(actual, expected):
    return float(np.max(np.abs(actual - expected) / np.maximum(np.abs(expected), ATOL)))


def onert_train(path, xs, ys, optimizer, learning_rate, batch, steps, trainable_ops=None):
    """(per-step losses, trained weights) of onert training ``path`` with MSE; the last
    ``trainable_ops`` operators of the file train (onert's num_of_trainable_ops; None:
    all).

    onert 0.1.0's ``train_export_circle`` writes a path longer than 15 characters
    under a garbage name in the working directory (measured: the C string of a
    temporary past the short-string buffer, it seems), so it exports to a short name
    with a temporary directory as the working directory."""
    import microtrain
    from onert.experimental.train import losses, optimizer as optimizers, session
    trainer = session(os.path.abspath(path))
    chosen = (optimizers.SGD(learning_rate=learning_rate) if optimizer == "sgd"
              else optimizers.Adam(learning_rate=learning_rate))
    if trainable_ops is not None:  # the optimizers' constructors do not take it
        chosen.nums_trainable_ops = trainable_ops
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.compile(optimizer=chosen, loss=losses.MeanSquaredError(), batch_size=batch)
    step_losses = []
    for k in range(steps):
        result = trainer.train_step([xs[k * batch:(k + 1) * batch]],
                                    [ys[k * batch:(k + 1) * batch]])
        step_losses.append(float(result["loss"][0]))
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as directory:
        os.chdir(directory)
        try:
            trainer.session.train_export_circle("w.circle")
        finally:
            os.chdir(here)
        weights = microtrain.convert(os.path.join(directory, "w.circle")).get_weights()
    return step_losses, weights
