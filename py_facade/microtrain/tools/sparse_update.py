"""``microtrain.sparse_update``: a sparse update scheme that fits a memory budget.

    scheme = microtrain.sparse_update("model.tflite", budget_bytes=256 * 1024,
                                      batch_size=1, optimizer="sgd", loss="scce")
    session.compile(optimizer="sgd", loss="scce", batch_size=1, trainable=scheme)
    assert session.memory_plan()["total_bytes"] <= 256 * 1024

Every scheme it weighs is planned by the core (``Session.plan_memory``, the planner compile()
binds), so the budget holds for the arena the session takes; the scheme records what it was
planned for (batch size, optimizer, loss) and holds for a compile() with the same.
"""

from . import sparse_calibration as _sparse_calibration
from .. import _array_files, _files, ops as _ops, optimizers as _optimizers, losses as _losses
from .._platform import is_integer
from ..session import Session
from ..sparse_scheme import SparseScheme, nothing_fits
from ..train_session import TrainSession

FRACTIONS = (0.125, 0.25, 0.5, 1.0)
# pointwise layers, float or int8 trained in place (convert(..., int8_train=True)): both kinds
# train the first k output rows of an [OC, KH, KW, IC] or [U, D] weight
_DENSE = (_ops.DENSE, _ops.DENSE_S8)
_CONV = (_ops.CONV2D, _ops.CONV2D_S8)


def _layers_with_weights(session):
    """Per layer with a trainable weight, from the last: (position, has a bias, pointwise:
    a Dense or a 1x1 Conv2D, float or int8 trained in place, whose output channels can
    train in part)."""
    found = []
    for layer, op_list in enumerate(session._layer_ops):
        facts = [session._op_facts[op] for op in op_list]
        if not any(f[3] for f in facts):
            continue
        bias = any(f[2] for f in facts)
        pointwise = any(f[1] is not None and (f[0] in _DENSE or (
            f[0] in _CONV and tuple(f[1][1:3]) == (1, 1))) for f in facts)
        found.append((layer, bias, pointwise))
    return found[::-1]


def _name(value, get):
    return value if isinstance(value, str) else get(value).name


def sparse_update(model, budget_bytes, batch_size=1, optimizer="sgd", loss=None,
                  calibration=None, calibration_epochs=2, seed=0):
    """A sparse update scheme whose arena fits ``budget_bytes``: tiny-training's heuristic,
    or, given ``calibration`` rows, each layer's contribution measured on them.

    tiny-training (Lin et al., "On-Device Training Under 256KB Memory", 2022) trains the
    biases of the last layers and the weights of a few pointwise layers of the last blocks,
    of those only a fraction of the output channels. This follows its published heuristic
    greedily, each step kept only while the core's plan of the whole scheme fits:

    0. the last layer with weights (the classifier) whole, when it fits: tiny-training
       always updates the classifier, and a new head (``convert(..., new_head=N)``) left at
       its random weights with only biases trained beside it stays at chance
       (benchmarks/sparse_accuracy.py measured such schemes at 3 to 22 %); else it enters
       with its bias in step 1 and its channels in step 2;
    1. biases, from the last layer with weights backwards, until the next one does not fit
       (a deeper bias carries the gradient through more layers);
    2. the weights of the pointwise layers (Dense, 1x1 Conv2D), from the last backwards, by
       channel fraction 1/8, 1/4, 1/2, 1 (the first ceil(f * channels)), each layer as far
       as it fits, then the next.

    The heuristic does not measure each layer's contribution to accuracy; with
    ``calibration=(x, y)`` the scheme is chosen by it instead (tools/sparse_calibration.py):
    beside the last layer, each layer's bias, weights and (pointwise) first channels are
    fine-tuned alone, ``calibration_epochs`` epochs on half the rows, their contribution is
    the drop of the loss on the other half, and they are taken greedily by contribution per
    arena byte while the whole scheme fits. Frozen channels of a trained layer still take
    their arena bytes (the core keeps the whole weight). On a model converted with
    ``int8_train=True`` it picks among the int8 layers trained in place as among float ones;
    their update is SGD with quantization-aware scaling, so another optimizer is refused
    (ValueError, compile()'s message).

    Args:
        model:        a path, bytes, a built model or a ``Session``
        budget_bytes: the arena's bytes at most (``memory_plan()["total_bytes"]``), > 0
        batch_size:   the batch size the scheme will be compiled with
        optimizer:    its optimizer ("sgd" or an optimizer object; SGD for int8 layers)
        loss:         its loss (None: compile()'s default, "mse")
        calibration:  None (the heuristic), or (x, y): rows the scheme is chosen on, at least
                      2 * batch_size, held out from those the result is judged on
        calibration_epochs: epochs each candidate trains on the calibration's first half
        seed:         the permutation of the calibration rows before they are halved
    Returns:
        a ``SparseScheme`` (JSON when printed) that ``compile(trainable=scheme)`` takes
    Raises:
        ValueError: a budget that is not a positive integer, or one that even the smallest
                    scheme (the last layer's bias) does not fit, naming that scheme's bytes;
                    a calibration set that is not (x, y) rows of the model's input shape and
                    targets the loss takes, at least 2 * batch_size of them, all finite
    """
    if isinstance(budget_bytes, bool) or not is_integer(budget_bytes) or budget_bytes <= 0:
        raise ValueError("budget_bytes is the arena's bytes at most, a positive integer; got %r"
                         % (budget_bytes,))
    loss = "mse" if loss is None else loss
    session = model if isinstance(model, Session) else TrainSession(model)
    try:
        if calibration is not None:
            return _choose_calibrated(session, int(budget_bytes), batch_size, optimizer, loss,
                                      calibration, calibration_epochs, seed)
        return _choose(session, int(budget_bytes), batch_size, optimizer, loss)
    finally:
        if session is not model:
            session.close()


def _planner(session, batch_size, optimizer, loss):
    """total(pairs): the arena bytes of a scheme, the core's plan (compile()'s)."""
    def total(layers):
        return session.plan_memory(optimizer=optimizer, loss=loss, batch_size=batch_size,
                                   trainable=dict(layers))["total_bytes"]
    return total


def _weighted_layers(session):
    candidates = _layers_with_weights(session)
    if not candidates:
        raise ValueError("this model has no trainable weight: nothing to choose a sparse "
                         "update from")
    return candidates


def _choose_calibrated(session, budget, batch_size, optimizer, loss, calibration, epochs, seed):
    return _sparse_calibration.choose(
        session, _weighted_layers(session), budget, batch_size, optimizer, loss, calibration,
        epochs, seed, _planner(session, batch_size, optimizer, loss),
        (_name(optimizer, _optimizers.get), _name(loss, _losses.get)))


def _choose(session, budget, batch_size, optimizer, loss):
    total = _planner(session, batch_size, optimizer, loss)
    candidates = _weighted_layers(session)
    chosen, used = [], None
    head = candidates[0][0]
    whole_head = total([(head, "all")])
    if whole_head <= budget:  # 0. the classifier whole
        chosen, used = [(head, "all")], whole_head
    for layer, bias, _ in candidates:  # 1. biases, from the last layer back
        if not bias or (layer, "all") in chosen:
            continue
        bytes_needed = total(chosen + [(layer, "bias")])
        if bytes_needed > budget:
            break
        chosen.append((layer, "bias"))
        used = bytes_needed
    for layer, _, pointwise in candidates:  # 2. pointwise weights by channel fraction
        if not pointwise or (layer, "all") in chosen:
            continue
        for fraction in FRACTIONS:
            value = "all" if fraction == 1.0 else fraction
            trial = [(key, old) for key, old in chosen if key != layer] + [(layer, value)]
            bytes_needed = total(trial)
            if bytes_needed > budget:
                break
            chosen, used = trial, bytes_needed
    if not chosen:
        last, bias, _ = candidates[0]
        smallest = total([(last, "bias" if bias else FRACTIONS[0])])
        raise nothing_fits(budget, batch_size, last, "bias" if bias else "first channels",
                           smallest)
    return SparseScheme(chosen, budget_bytes=budget, total_bytes=used, batch_size=batch_size,
                        optimizer=_name(optimizer, _optimizers.get),
                        loss=_name(loss, _losses.get))


def scheme_from_flags(session, budget, scheme_path, trainable, num_trainable_ops, batch_size,
                      optimizer, loss, calibration_path=None):
    """The sparse scheme the command-line flags --budget / --trainable-scheme choose for
    ``session`` (None when neither is given), --budget's by the rows of --calibration
    (``calibration_path``, an .npz with arrays x and y) when given. ValueError, naming the
    flag, for a scheme file that is not one, for either beside --trainable /
    --num-of-trainable-ops or the other, for --calibration without --budget or whose file is
    no such data set, and for a budget nothing fits."""
    if calibration_path is not None and budget is None:
        raise ValueError("--calibration chooses --budget's scheme: give --budget BYTES too")
    if budget is None and scheme_path is None:
        return None
    if budget is not None and scheme_path is not None:
        raise ValueError("give --budget or --trainable-scheme, not both")
    if trainable is not None or num_trainable_ops is not None:
        raise ValueError("--budget and --trainable-scheme choose what trains: leave out "
                         "--trainable and --num-of-trainable-ops")
    if scheme_path is not None:
        try:
            scheme = SparseScheme.from_json(
                _files.read_file(scheme_path, "a sparse scheme").decode("utf-8"))
            # planned once here, so that a layer it names wrongly is this flag's error
            session.plan_memory(optimizer, loss, batch_size, scheme)
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise ValueError("--trainable-scheme %s: %s" % (scheme_path, error))
        return scheme
    calibration = None
    if calibration_path is not None:
        try:
            arrays = _array_files.load_npz(calibration_path, "calibration rows", required=("x", "y"))
            calibration = _sparse_calibration.checked_calibration(
                session, (arrays["x"], arrays["y"]), batch_size)
        except FileNotFoundError:
            raise ValueError("--calibration: file not found: %s" % calibration_path)
        except (OSError, ValueError) as error:
            raise ValueError("--calibration %s: %s" % (calibration_path, error))
    try:
        return sparse_update(session, budget, batch_size, optimizer, loss, calibration=calibration)
    except ValueError as error:
        raise ValueError("--budget: %s" % error)
