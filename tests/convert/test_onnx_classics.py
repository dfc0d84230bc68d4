"""The ONNX classics at their real sizes, against ONNX Runtime: SqueezeNet 1.1 and ResNet-50.

1. Written in PyTorch (classic_models.py), exported by torch.onnx.export at opset 9 and 17
   into a temporary folder (once per module run, not committed): ResNet's stem MaxPool
   (3x3, stride 2, pads 1 on 112x112) runs with explicit pads, SqueezeNet's ceil_mode pools
   (asymmetric pads at opset 9) and its softmax over the channels of [N, C, 1, 1]. Forward
   within rtol 1e-5 of ONNX Runtime and of PyTorch, and one fine-tuning step trains
   (SqueezeNet whole; ResNet-50 its last block and classifier, realistic fine-tuning).
2. The model zoo's own graphs that the ``onnx`` wheel ships (onnx/backend/test/data/light:
   SqueezeNet 1.1 and ResNet-50 as the zoo exported them at opset 9, their weights left out
   and made by ConstantOfShape nodes): with weights drawn from a seed in their place. The
   zoo's SqueezeNet ends in Softmax(axis=1) over [N, 1000, 1, 1] under opset 9's semantics.
3. The wheel's other classics stop at an op the core lacks (LRN, grouped convolution, a
   BatchNormalization after a Concat): each is a ConversionError naming that op and its
   index, never a bare KeyError.
"""

import os
import sys
import warnings

import numpy as np
import pytest

import microtrain
from microtrain.nn import image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
import classic_models  # noqa: E402
import torch_models  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)

OPSETS = (9, 17)
ZOO = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(name, opset) -> path of the exported .onnx (each exported once, on first use)."""
    folder = tmp_path_factory.mktemp("classics")
    paths = {}

    def export(name, opset):
        if (name, opset) not in paths:
            torch_models.skip_torch_export_under_asan()
            module, example = classic_models.classic_models()[name]
            path = str(folder / ("%s_opset%d.onnx" % (name, opset)))
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(module, (example,), path, dynamo=False, opset_version=opset,
                                  input_names=["input"], output_names=["output"],
                                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
            paths[(name, opset)] = (path, module)
        return paths[(name, opset)]
    return export


def images(n, seed):
    return np.random.default_rng(seed).standard_normal((n, 3, 224, 224)).astype(np.float32)


def core_ops(model):
    return image.read_image(model.to_bytes()).ops


def infer(model, x):
    """Output 0 from the C core, the session planned for inference (num_trainable_ops=0:
    the whole ResNet-50 trained at once would need more buffers than the planner's 256)."""
    with microtrain.TrainSession(model.to_bytes()) as session:
        session.compile("sgd", "mse", batch_size=x.shape[0], num_trainable_ops=0)
        return session.infer(x)[0].copy()


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", ["squeezenet1_1", "resnet50"])
def test_classic_matches_onnxruntime_and_torch(name, opset, exported):
    path, module = exported(name, opset)
    model = microtrain.convert(path)
    ops = core_ops(model)
    pools = [op for op in ops if op.op_type == microtrain.ops.MAX_POOL2D]
    if name == "resnet50":
        # the stem pool: windows from one row and column before the 112x112 input
        assert [op.params for op in pools] == [
            (3 | 3 << 16, 2 | 2 << 16, image.PADDING_EXPLICIT, 1 | 1 << 16)]
    else:
        assert len(pools) == 3 and ops[-1].op_type in (microtrain.ops.SOFTMAX,
                                                       microtrain.ops.RESHAPE)
    x = images(1, 3)
    actual = infer(model, x)
    expected = peers.run_onnxruntime(path, x)
    assert actual.shape == expected.shape  # [N, 1000, 1, 1] / [N, 1000], as ONNX Runtime
    np.testing.assert_allclose(actual, expected, rtol=peers.RTOL, atol=peers.ATOL)
    with torch.no_grad():
        np.testing.assert_allclose(actual, module(torch.from_numpy(x)).numpy(),
                                   rtol=peers.RTOL, atol=peers.ATOL)


@pytest.mark.parametrize("name,trained_ops", [("squeezenet1_1", -1), ("resnet50", 12)])
def test_classic_fine_tunes(name, trained_ops, exported):
    """compile + train_step: the trained weights move and so does the output."""
    path, _ = exported(name, 9)
    x = images(1, 5)
    with microtrain.TrainSession(path) as session:
        session.compile("adam", "mse", batch_size=1, num_trainable_ops=trained_ops)
        before = session.infer(x)[0].copy()
        weights = [w.copy() for w in session.get_weights()]
        target = np.zeros_like(before)
        target.reshape(-1)[7] = 1.0
        loss = session.train_step(x, target)["loss"][0]
        after = session.infer(x)[0].copy()
        moved = [not np.array_equal(a, b) for a, b in zip(weights, session.get_weights())]
    assert np.isfinite(loss) and not np.allclose(before, after, rtol=1e-4, atol=0)
    assert moved[-1] and (moved[0] if trained_ops == -1 else not moved[0])


# ---------------------------------------------------------------- the onnx wheel's zoo


def zoo_graph(name, seed):
    """The wheel's model zoo graph ``light_<name>.onnx`` with each ConstantOfShape weight
    replaced by values from ``seed``: convolution and Gemm weights uniform in
    +-1/sqrt(fan in), biases in +-0.1, BatchNorm scales 0.5..1.5, shifts +-0.3, means +-0.2,
    variances 0.5..2.0 (torch_models._randomise's ranges)."""
    from onnx import numpy_helper
    path = os.path.join(ZOO, "light_%s.onnx" % name)
    if not os.path.exists(path):
        pytest.fail("the onnx wheel has no %s (onnx/backend/test/data/light)" % path,
                    pytrace=False)
    proto = onnx.load(path)
    rng = np.random.default_rng(seed)
    constants = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    uses = {}
    for node in proto.graph.node:
        for position, name_in in enumerate(node.input):
            uses.setdefault(name_in, (node, position))
    kept = []
    for node in proto.graph.node:
        if node.op_type != "ConstantOfShape" or node.output[0] not in uses:
            kept.append(node)
            continue
        shape = tuple(int(d) for d in constants[node.input[0]])
        consumer, position = uses[node.output[0]]
        kind = (consumer.op_type, position)
        if kind in (("Conv", 1), ("Gemm", 1)):
            trans_b = any(a.name == "transB" and a.i for a in consumer.attribute)
            fan_in = int(np.prod(shape[1:])) if kind[0] == "Conv" or trans_b else shape[0]
            bound = 1.0 / np.sqrt(fan_in)
            values = rng.uniform(-bound, bound, shape)
        elif kind[0] == "BatchNormalization":
            low, high = {1: (0.5, 1.5), 2: (-0.3, 0.3), 3: (-0.2, 0.2), 4: (0.5, 2.0)}[position]
            values = rng.uniform(low, high, shape)
        else:
            values = rng.uniform(-0.1, 0.1, shape)
        proto.graph.initializer.append(numpy_helper.from_array(values.astype(np.float32),
                                                               node.output[0]))
        # these graphs are IR version 3, where every initializer is also a graph input
        proto.graph.input.append(onnx.helper.make_tensor_value_info(
            node.output[0], onnx.TensorProto.FLOAT, shape))
    del proto.graph.node[:]
    proto.graph.node.extend(kept)
    return proto.SerializeToString()


@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_model_zoo_graphs_from_the_onnx_wheel(name):
    data = zoo_graph(name, 50)
    model = microtrain.convert(data)
    ops = [op.op_type for op in core_ops(model)]
    assert microtrain.ops.SOFTMAX in ops and microtrain.ops.MAX_POOL2D in ops
    x = images(1, 6)
    import onnxruntime
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    graph_inputs = [i.name for i in session.get_inputs()]
    initializers = {t.name for t in onnx.load_from_string(data).graph.initializer}
    data_input = [n for n in graph_inputs if n not in initializers][0]
    expected = session.run(None, {data_input: x})[0]
    actual = infer(model, x)
    assert actual.shape == expected.shape
    assert np.ptp(expected) > 1e-4  # the seeded weights make the classes differ
    np.testing.assert_allclose(actual, expected, rtol=peers.RTOL, atol=peers.ATOL)


@pytest.mark.parametrize("name,words", [
    ("inception_v1", "onnx node 96 (LRN 'n3'): op LRN is not supported"),
    ("shufflenet", "onnx node 247 (Conv 'n4'): group=4 with 24 input and 112 output channels "
                   "is not supported"),
    ("densenet121", "onnx node 844 (BatchNormalization 'n8'): BatchNormalization folds only "
                    "into the Conv"),
])
def test_model_zoo_graphs_the_core_cannot_run_are_refused_by_name(name, words):
    with pytest.raises(microtrain.convert.ConversionError) as caught:
        microtrain.convert(os.path.join(ZOO, "light_%s.onnx" % name))
    assert str(caught.value).startswith(words) and "supported:" in str(caught.value)
