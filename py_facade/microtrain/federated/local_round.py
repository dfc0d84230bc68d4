"""One client's round of federated training: the procedure every microtrain client runs.

It is written in the MicroPython-safe subset on purpose: the simulated client imports it on
CPython, and the device client (``microtrain.federated.device``) sends this very file to
MicroPython firmware on an emulated board and calls the same functions there. So the
update a board computes is, by construction, the simulated client's procedure over the same
core: same compile, same weights, same batch order, same steps, the same bits.

    settings = {"optimizer": "sgd", "learning_rate": 0.05, "loss": "categorical_crossentropy",
                "batch_size": 16, "trainable": "all", "epochs": 1, "proximal_mu": 0.0,
                "seed": 0}   # optionally "num_trainable_ops": N instead of trainable
    compile_session(session, settings)
    update, logs = train_round(session, global_trained_weights, x, y, settings,
                               server_round, partition)

A round: the trained weights received (the global model of the round) replace the session's
(``set_weights``); with FedProx's ``proximal_mu`` they also become the proximal reference
(``set_reference``); then ``epochs`` epochs over the client's rows, shuffled in an order
seeded by (seed, server round, partition), batches of the device's batch size; the update
is the trained weights after training. The core's update guard refuses a non-finite step
(compiled with ``guard_gradients``), and ``train`` raises it: a client with such an update
sends no update at all.
"""

from microtrain import _random
from microtrain import optimizers as _optimizers
from microtrain import trainable as _trainable
from microtrain.data import DataLoader

# "trainable" is compile()'s (all, bias, the last N layers with weights, or layers by
# position or name); "num_trainable_ops", when a setting holds it, is onert's count of ops
# and replaces it
SETTING_NAMES = ("optimizer", "learning_rate", "loss", "batch_size", "trainable", "epochs",
                 "proximal_mu", "seed")
_INTEGER_SETTINGS = ("batch_size", "epochs", "seed", "num_trainable_ops")
_FLOAT_SETTINGS = ("learning_rate", "proximal_mu")


def round_seed(seed, server_round, partition):
    """The shuffle seed of one client's round: stable on every platform."""
    return _random.mix(seed, server_round, partition)


def optimizer_for(settings):
    optimizer = _optimizers.get(settings["optimizer"])
    config = optimizer.get_config()
    config["learning_rate"] = float(settings["learning_rate"])
    return type(optimizer)(**config)


def compile_session(session, settings, metrics=()):
    """Compile for local training as the device would: its batch size, what trains, the
    update guard on (a refused step changes nothing) and FedProx's term when μ > 0."""
    ops = settings.get("num_trainable_ops")
    session.compile(optimizer_for(settings), settings["loss"], metrics=list(metrics),
                    batch_size=int(settings["batch_size"]),
                    trainable=None if ops is not None else settings["trainable"],
                    num_trainable_ops=None if ops is None else int(ops), guard_gradients=True,
                    proximal_mu=float(settings["proximal_mu"]))


def trained_positions(session):
    """Positions, in get_weights() order, of the weights the session trains."""
    trained = session.trained_tensors()
    params = session.model_description()["params"]
    return [position for position in range(len(params)) if params[position][0] in trained]


def load_global(session, trained_weights):
    """Replace the trained weights by the round's global ones (frozen weights are the
    image's, the same on every client) and make them the proximal reference."""
    weights = session.get_weights()
    positions = trained_positions(session)
    if len(trained_weights) != len(positions):
        raise ValueError("the global model has %d trained tensors, this session trains %d"
                         % (len(trained_weights), len(positions)))
    for position, value in zip(positions, trained_weights):
        weights[position] = value
    session.set_weights(weights)
    if float(session.config["proximal_mu"]) > 0.0:
        session.set_reference()


def train_round(session, trained_weights, x, y, settings, server_round, partition):
    """One local round on a compiled session; returns (trained weights after training,
    the last epoch's logs)."""
    load_global(session, trained_weights)
    loader = DataLoader(x, y, batch_size=int(settings["batch_size"]), shuffle=True,
                        seed=round_seed(int(settings["seed"]), int(server_round),
                                        int(partition)))
    history = session.train(loader, epochs=int(settings["epochs"]), verbose=0)
    logs = {}
    for name in history.history:
        logs[name] = history.history[name][-1]
    weights = session.get_weights()
    return [weights[position] for position in trained_positions(session)], logs


def settings_to_words(settings):
    """``name=value`` words (the device script's arguments)."""
    names = list(SETTING_NAMES)
    if settings.get("num_trainable_ops") is not None:
        names.append("num_trainable_ops")
    words = []
    for name in names:
        if name in _FLOAT_SETTINGS:
            words.append("%s=%r" % (name, settings[name]))
        elif name == "trainable":
            words.append("trainable=%s" % _trainable.spec_text(settings[name]))
        else:
            words.append("%s=%s" % (name, settings[name]))
    return words


def settings_from_words(words):
    """The settings dict of ``settings_to_words``."""
    settings = {}
    for word in words:
        name, value = word.split("=", 1)
        if name == "trainable":
            settings[name] = _trainable.parse_spec(value)
        elif name in _INTEGER_SETTINGS:
            settings[name] = int(value)
        elif name in _FLOAT_SETTINGS:
            settings[name] = float(value)
        else:
            settings[name] = value
    return settings
