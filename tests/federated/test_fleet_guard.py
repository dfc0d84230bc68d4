"""The fleet's server against hostile replies (issue 45, items 15-18): ``guard.py``.

The guarded strategies are driven directly with crafted replies (no Ray): a reply of float64
1e300, a bias of shape (1,) before or after an honest reply, a transposed weight, and
num-examples of 1e308, 2**63 - 1, 0 or 2.5 are each dropped with a reason, and the aggregate
equals the honest replies' aggregate bit for bit, for FedAvg and FedAvgM. An aggregate a
strategy makes non-finite from finite replies is not taken. A client that raises is reported
by its own exception text, also through Flower's and Ray's wrapping.

Then one fleet on Flower's simulation engine, in its own process under a 4 GiB
address-space cap, with four hostile clients ("huge", "shape", "examples", "raise"):
it finishes, drops exactly them every round with their reasons, and its global weights
equal, bit for bit, FedAvg of the two honest clients computed here without Ray.
"""

import json
import os
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("flwr", reason="microtrain.federated needs Flower: pip install "
                                   "microtrain[federated] (tools/setup_host.sh --test)")

from flwr.app import (Array, ArrayRecord, ConfigRecord, Message, MessageType,  # noqa: E402
                      MetricRecord, RecordDict)
from flwr.serverapp.strategy.strategy_utils import aggregate_arrayrecords  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

import microtrain  # noqa: E402
from microtrain import layers  # noqa: E402
from microtrain.federated import client, guard, server  # noqa: E402
from microtrain.federated.fleet import make_settings  # noqa: E402
from microtrain.federated.task import FleetTask  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from hostile_process import python, run_capped  # noqa: E402

ROWS = 40  # per client: 6 clients, an iid split of 240 rows


@pytest.fixture(scope="module")
def fleet_files(tmp_path_factory):
    from sklearn.datasets import load_digits
    folder = tmp_path_factory.mktemp("fleet_guard")
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)[:300]
    y = np.eye(10, dtype=np.float32)[data.target[:300]]
    np.savez(str(folder / "digits.npz"), x=x[:240], y=y[:240], x_eval=x[240:],
             y_eval=y[240:])
    microtrain.Sequential([layers.Dense(10), layers.Softmax()], input_shape=(64,),
                          seed=0).save(str(folder / "m.mtm"))
    return {"model": str(folder / "m.mtm"), "data": str(folder / "digits.npz")}


def fleet_task(fleet_files, faults=None):
    with open(fleet_files["model"], "rb") as handle:
        image = handle.read()
    settings = make_settings("sgd", 0.1, "categorical_crossentropy", 16, -1, 1, 0.0, 0)
    return FleetTask(image, fleet_files["data"], 6, settings, "iid", 0.5, 2, 0,
                     faults=faults)


@pytest.fixture()
def identity():
    """Flower builds messages for a run: give this process a run and node id."""
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 0
    yield
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


LAYOUT = [("t1", (64, 10)), ("t2", (10,))]


def reply(node, tensors, metrics=None, records=None):
    """A client's train reply from node ``node`` (its partition is node - 100)."""
    question = Message(RecordDict({"config": ConfigRecord({"server-round": 1})}),
                       dst_node_id=node, message_type=MessageType.TRAIN)
    content = records if records is not None else RecordDict({
        "arrays": ArrayRecord({key: Array(np.asarray(value)) for key, value in tensors.items()}),
        "metrics": MetricRecord(metrics if metrics is not None else
                                {"num-examples": ROWS, "train-loss": 0.5})})
    return Message(content, reply_to=question)


def honest(seed):
    rng = np.random.default_rng(seed)
    return {"t1": rng.standard_normal((64, 10)).astype(np.float32),
            "t2": rng.standard_normal(10).astype(np.float32)}


def strategy(name, **options):
    made = server.make_strategy(name, min_nodes=1, **options)
    made.fleet_log = server.FleetLog()
    made.partitions = {100 + p: p for p in range(6)}
    made.layout = LAYOUT
    made.rows = {p: ROWS for p in range(6)}
    return made


def aggregate(name, replies, **options):
    made = strategy(name, **options)
    if name == "fedavgm":  # its momentum starts from the round's global model
        made.current_arrays = ArrayRecord({key: Array(np.zeros(shape, np.float32))
                                           for key, shape in LAYOUT})
    arrays, _ = made.aggregate_train(1, replies)
    return arrays, made.fleet_log


def same_arrays(left, right):
    assert left is not None and right is not None
    for key, _ in LAYOUT:
        np.testing.assert_array_equal(left[key].numpy(), right[key].numpy())


HOSTILE = {
    "float64 1e300": ({"t1": np.full((64, 10), 1e300), "t2": np.zeros(10)}, None,
                      "tensor t1 is not finite in float32"),
    "a bias of shape (1,)": ({"t1": np.zeros((64, 10), np.float32),
                              "t2": np.ones(1, np.float32)}, None,
                             "tensor t2 has shape (1,); the model's is (10,)"),
    "a transposed weight": ({"t1": np.zeros((10, 64), np.float32),
                             "t2": np.zeros(10, np.float32)}, None, "tensor t1 has shape"),
    "integer tensors": ({"t1": np.zeros((64, 10), np.int32), "t2": np.zeros(10, np.int32)},
                        None, "tensor t1 is int32"),
    "an extra tensor": (dict(honest(9), t7=np.zeros(3, np.float32)), None,
                        "sends tensor t7, which the model does not train"),
    "a missing tensor": ({"t1": np.zeros((64, 10), np.float32)}, None, "lacks tensor t2"),
    "num-examples 1e308": (honest(9), {"num-examples": 1e308, "train-loss": 0.5},
                           "num-examples is 1e+308"),
    "num-examples 2**63 - 1": (honest(9), {"num-examples": 2 ** 63 - 1, "train-loss": 0.5},
                               "num-examples is 9223372036854775807"),
    "num-examples 0": (honest(9), {"num-examples": 0, "train-loss": 0.5},
                       "num-examples is 0"),
    "num-examples 2.5": (honest(9), {"num-examples": 2.5, "train-loss": 0.5},
                         "num-examples is 2.5"),
    "num-examples above its rows": (honest(9), {"num-examples": ROWS + 1, "train-loss": 0.5},
                                    "the 40 rows its partition holds"),
    "a NaN train loss": (honest(9), {"num-examples": ROWS, "train-loss": float("nan")},
                         "metric train-loss is nan"),
    "an extra metric": (honest(9), {"num-examples": ROWS, "train-loss": 0.5, "x": 1},
                        "its metrics are"),
}


@pytest.mark.parametrize("name", ["fedavg", "fedavgm"])
@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("first", [True, False])
def test_a_hostile_reply_is_dropped_and_the_rest_aggregate_as_without_it(identity, name, case,
                                                                         first):
    tensors, metrics, reason = HOSTILE[case]
    honest_replies = [reply(100, honest(0)), reply(101, honest(1))]
    bad = reply(102, tensors, metrics)
    replies = [bad] + honest_replies if first else honest_replies + [bad]
    expected, _ = aggregate(name, [reply(100, honest(0)), reply(101, honest(1))])
    arrays, log = aggregate(name, replies)
    same_arrays(arrays, expected)
    assert log.dropped == {1: 1}
    assert log.reasons[0][:2] == (1, 2) and reason in log.reasons[0][2], log.reasons


def test_num_examples_cannot_zero_the_others_or_dictate_the_model(identity):
    """1e308 on two replies made FedAvg's weights exactly 0; on one, that client's update
    became the model. Now both are dropped and the honest reply alone is the aggregate."""
    lying = {"num-examples": 1e308, "train-loss": 0.5}
    arrays, log = aggregate("fedavg", [reply(100, honest(0)), reply(101, honest(1), lying),
                                       reply(102, honest(2), lying)])
    same_arrays(arrays, ArrayRecord({k: Array(v) for k, v in honest(0).items()}))
    assert log.dropped == {1: 2}


def test_a_reply_that_is_not_a_microtrain_reply_is_dropped(identity):
    odd = {"two array records": RecordDict({
               "arrays": ArrayRecord({k: Array(v) for k, v in honest(3).items()}),
               "more": ArrayRecord({k: Array(v) for k, v in honest(3).items()}),
               "metrics": MetricRecord({"num-examples": ROWS, "train-loss": 0.5})}),
           "no metrics": RecordDict({"arrays": ArrayRecord({k: Array(v) for k, v in
                                                            honest(3).items()})}),
           "an object array": RecordDict({
               "arrays": ArrayRecord({"t1": Array(dtype="object", shape=(1,),
                                                  stype="numpy.ndarray",
                                                  data=b"\x93NUMPY\x01\x00v\x00{'descr': '|O',"
                                                       b" 'fortran_order': False, 'shape':"
                                                       b" (1,), }" + b" " * 60 + b"\n"),
                                      "t2": Array(np.zeros(10, np.float32))}),
               "metrics": MetricRecord({"num-examples": ROWS, "train-loss": 0.5})})}
    for name, content in odd.items():
        arrays, log = aggregate("fedavg", [reply(100, honest(0)),
                                           reply(101, None, records=content)])
        same_arrays(arrays, ArrayRecord({k: Array(v) for k, v in honest(0).items()}))
        assert log.dropped == {1: 1}, name


def test_a_non_finite_aggregate_of_finite_replies_is_not_taken(identity):
    """FedAvgM with a huge server learning rate overflows float32 from finite replies: the
    round keeps the global model (the strategy returns no arrays) and says why."""
    arrays, log = aggregate("fedavgm", [reply(100, {"t1": np.full((64, 10), 3e38, np.float32),
                                                    "t2": np.zeros(10, np.float32)})],
                            server_learning_rate=1e30)
    assert arrays is None
    assert log.notes and "not finite" in log.notes[0][1] and log.dropped == {}


def test_a_node_that_claims_a_partition_it_cannot_hold_is_not_believed(identity):
    def answer(value):
        question = Message(RecordDict(), dst_node_id=105, message_type=MessageType.QUERY)
        return Message(RecordDict({"metrics": MetricRecord({"partition-id": value})}),
                       reply_to=question)
    assert guard.partition_id(answer(3), 6) == 3
    for value in (6, -1, 2.0, 2 ** 40):
        assert guard.partition_id(answer(value), 6) is None, value


def test_every_strategy_of_the_command_line_is_made_and_guarded(identity):
    """`microtrain fleet --strategy NAME` for every name: QFedAvg lacked its clients' learning
    rate (a TypeError) and read a loss metric microtrain clients do not send."""
    from microtrain.federated.fleet import strategy_defaults
    for name in server.STRATEGIES:
        made = server.make_strategy(name, min_nodes=1,
                                    **strategy_defaults(name, None, None, 0.05))
        assert isinstance(made, server._GuardedReplies), name


FLOWER_REASON = (
    "<class 'ray.exceptions.RayTaskError(ClientAppException)'>:<'\x1b[36mray::ClientAppActor"
    ".run()\x1b[39m (pid=21394, ip=192.0.2.2, actor_id=5e6a, repr=<flwr.simulation.ray_tran"
    "sport.ray_actor.ClientAppActor object at 0x7efc78d4b190>)\n                  ^^^^^^^\n"
    "  File \"/venv/flwr/clientapp/client_app.py\", line 161, in __call__\n    return self."
    "_registered_funcs[full_name](message, context)\n  File \"/app/client.py\", line 12, in "
    "train\n    raise ZeroDivisionError(\"hostile client says no\")\nZeroDivisionError: hosti"
    "le client says no\n\nThe above exception was the direct cause of the following excepti"
    "on:\n\n\x1b[36mray::ClientAppActor.run()\x1b[39m (pid=21394)\n  File \"/venv/flwr/simula"
    "tion/ray_transport/ray_actor.py\", line 65, in run\n    raise ClientAppException(str(ex"
    ")) from ex\nflwr.clientapp.client_app.ClientAppException: \nException ClientAppExceptio"
    "n occurred. Message: hostile client says no'>")


def test_a_client_that_raises_is_reported_by_its_own_exception():
    """The reason Flower gives for an exception that escapes a ClientApp under Ray (this
    one captured from Flower 1.42's simulation engine) reads as the client's exception."""
    assert guard.client_reason(FLOWER_REASON) == "ZeroDivisionError: hostile client says no"
    assert guard.client_reason("client 3, round 1: MT_ERR_NUMERIC ...") == \
        "client 3, round 1: MT_ERR_NUMERIC ..."
    flower_only = "<class 'X'>:<'\nException ClientAppException occurred. Message: boom'>"
    assert guard.client_reason(flower_only) == "the client raised: boom"


HOSTILE_FLEET = textwrap.dedent("""
    import json, sys
    import numpy as np
    from microtrain.federated.fleet import run_fleet
    result = run_fleet(sys.argv[1], sys.argv[2], clients=6, rounds=2, strategy="fedavg",
                       split="iid", learning_rate=0.1, batch_size=16, seed=0, cpus=2,
                       faults={1: "huge", 2: "shape", 3: "examples", 4: "raise"})
    print(json.dumps({"weights": [w.tolist() for w in result.weights],
                      "dropped": result.dropped, "rounds": result.rounds}))
""")


def fedavg_without_ray(task, partitions, rounds):
    """The global trained tensors after ``rounds`` rounds of FedAvg over ``partitions``,
    replies in partition order as the server orders them."""
    layout = client.trained_layout(task)
    weights = client.from_record(server.initial_arrays(task), layout)
    for server_round in range(1, rounds + 1):
        contents = []
        for partition in partitions:
            update, _, examples = client.simulated_round(task, partition, weights,
                                                         server_round)
            contents.append(RecordDict({
                "arrays": client.to_record([k for k, _ in layout], update),
                "metrics": MetricRecord({"num-examples": examples})}))
        weights = client.from_record(aggregate_arrayrecords(contents, "num-examples"), layout)
    return weights


def test_a_fleet_with_hostile_clients_finishes_without_them(fleet_files):
    outcome = run_capped(python("-c", HOSTILE_FLEET, fleet_files["model"],
                                fleet_files["data"]), timeout=600)
    assert outcome.status == 0, outcome
    result = json.loads(outcome.stdout.strip().splitlines()[-1])
    reasons = {(r, p): why for r, p, why in result["dropped"]}
    assert sorted(reasons) == [(r, p) for r in (1, 2) for p in (1, 2, 3, 4)]
    assert "not finite in float32" in reasons[(1, 1)]
    assert "shape (1,)" in reasons[(1, 2)]
    assert "num-examples is 1e+308" in reasons[(1, 3)]
    assert "ZeroDivisionError: client 4 divides by zero" in reasons[(1, 4)]
    assert [row["clients"] for row in result["rounds"][1:]] == [2, 2]
    expected = fedavg_without_ray(fleet_task(fleet_files), [0, 5], 2)
    for got, want in zip(result["weights"], expected):
        np.testing.assert_array_equal(np.asarray(got, np.float32), want)
