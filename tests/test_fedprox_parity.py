"""FedProx's proximal term (``compile(proximal_mu=μ)``, ``set_reference()``) against PyTorch.

A FedProx client trains on loss + μ/2·Σ‖w − w_global‖² over its trained weights, as Flower's
PyTorch FedProx client writes it. The core adds the gradient μ·(w − w_ref) to every update;
the torch reference adds the term to the loss and lets autograd differentiate it. Over 50
steps from a global model that differs from the image's weights (loaded with set_weights,
then made the reference), per-step losses without the term and final weights must agree
within the parity tolerance of tests/test_parity_torch.py, for SGD (with momentum and
decay), Adam and AdamW, and when only the last layer trains (the reference then covers the
trained weights only). The one-step gradient is compared on its own too.
"""

import numpy as np
import pytest
import torch

import microtrain
from microtrain import optimizers

from test_parity_torch import (ARCHITECTURES, BATCH_SIZE, RTOL, ATOL, batches, make_data,
                               make_microtrain_model, make_torch_model, torch_loss,
                               torch_optimizer)

MU = 0.5


def both_models(architecture):
    """(the torch model, microtrain's with its weights, x, targets, the torch model's weights)
    of one of test_parity_torch's architectures"""
    sizes, activations, kind = ARCHITECTURES[architecture]
    torch_model = make_torch_model(sizes, activations)
    mt_model = make_microtrain_model(sizes, activations, torch_model)
    x, target = make_data(sizes, kind)
    return torch_model, mt_model, x, target, global_weights(torch_model)


def global_weights(torch_model):
    """The round's global model: the initial weights moved by a seeded perturbation."""
    rng = np.random.default_rng(7)
    return [p.detach().numpy() + rng.normal(0, 0.2, p.shape).astype(np.float32)
            for p in torch_model.parameters()]


def train_torch_fedprox(model, loss_name, optimizer, x, y, trained, start, mu):
    with torch.no_grad():
        for parameter, value in zip(model.parameters(), start):
            parameter.copy_(torch.from_numpy(value))
    reference = [p.detach().clone() for p in trained]
    torch_opt = torch_optimizer(optimizer, trained)
    x_all, y_all = torch.from_numpy(x), torch.from_numpy(y)
    losses = []
    for first, stop in batches():
        torch_opt.zero_grad()
        loss = torch_loss(loss_name, "mean", model, x_all[first:stop], y_all[first:stop])
        proximal = sum(((p - r) ** 2).sum() for p, r in zip(trained, reference))
        (loss + mu / 2 * proximal).backward()
        torch_opt.step()
        losses.append(loss.item())
    return np.array(losses), [p.detach().numpy().copy() for p in model.parameters()]


def train_microtrain_fedprox(mt_model, loss_name, optimizer, x, y, start, mu, trainable=-1):
    with microtrain.TrainSession(mt_model) as session:
        session.compile(optimizer, loss_name, batch_size=BATCH_SIZE,
                        num_trainable_ops=trainable, proximal_mu=mu)
        plan = session.memory_plan()
        assert plan["reference_bytes"] == plan["weight_bytes"]
        session.set_weights(start)
        session.set_reference()
        losses = []
        for first, stop in batches():
            step = session.train_step(x[first:stop], y[first:stop])
            # the core reports the loss without the term (what the metrics describe)
            losses.append(step["loss"][0])
        return np.array(losses), session.get_weights()


CASES = [optimizers.SGD(learning_rate=0.1),
         optimizers.SGD(learning_rate=0.05, momentum=0.9, weight_decay=0.01),
         optimizers.Adam(learning_rate=0.01),
         optimizers.AdamW(learning_rate=0.01, weight_decay=0.05)]


@pytest.mark.parametrize("optimizer", CASES, ids=["sgd", "sgd_momentum_decay", "adam",
                                                  "adamw"])
def test_fedprox_training_matches_torch(optimizer):
    torch_model, mt_model, x, labels, start = both_models("classifier")
    mt_losses, mt_weights = train_microtrain_fedprox(
        mt_model, "sparse_categorical_crossentropy", optimizer, x, labels, start, MU)
    torch_losses, torch_weights = train_torch_fedprox(
        torch_model, "sparse_categorical_crossentropy", optimizer, x, labels,
        list(torch_model.parameters()), start, MU)
    np.testing.assert_allclose(mt_losses, torch_losses, rtol=RTOL, atol=ATOL)
    for position, (ours, theirs) in enumerate(zip(mt_weights, torch_weights)):
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL,
                                   err_msg="weight tensor %d" % position)
    # the term mattered: without it training ends elsewhere
    with microtrain.TrainSession(mt_model) as session:
        session.compile(optimizer, "sparse_categorical_crossentropy", batch_size=BATCH_SIZE)
        session.set_weights(start)
        for first, stop in batches():
            session.train_step(x[first:stop], labels[first:stop])
        assert max(np.abs(a - b).max() for a, b in zip(session.get_weights(), mt_weights)) > 1e-3


def test_fedprox_with_only_the_last_layer_trained_matches_torch():
    torch_model, mt_model, x, labels, start = both_models("classifier")
    optimizer = optimizers.SGD(learning_rate=0.1, momentum=0.9)
    mt_losses, mt_weights = train_microtrain_fedprox(
        mt_model, "sparse_categorical_crossentropy", optimizer, x, labels, start, MU,
        trainable=2)
    last = torch_model[-2]
    torch_losses, torch_weights = train_torch_fedprox(
        torch_model, "sparse_categorical_crossentropy", optimizer, x, labels,
        [last.weight, last.bias], start, MU)
    np.testing.assert_allclose(mt_losses, torch_losses, rtol=RTOL, atol=ATOL)
    for position in range(4):  # frozen: the global model's values, exactly
        np.testing.assert_array_equal(mt_weights[position], start[position])
    for position in (4, 5):
        np.testing.assert_allclose(mt_weights[position], torch_weights[position], rtol=RTOL,
                                   atol=ATOL)


def test_one_step_gradient_of_the_proximal_objective_matches_autograd():
    """(w0 − w1) / lr of one plain SGD step is the gradient of loss + μ/2‖w − w_ref‖²."""
    torch_model, mt_model, x, y, reference = both_models("regression")
    moved = [w + np.float32(0.3) for w in reference]  # w ≠ w_ref
    rate = 0.5
    with microtrain.TrainSession(mt_model) as session:
        session.compile(optimizers.SGD(learning_rate=rate), "mse", batch_size=BATCH_SIZE,
                        proximal_mu=MU)
        session.set_weights(reference)
        session.set_reference()
        session.set_weights(moved)
        session.train_step(x[:BATCH_SIZE], y[:BATCH_SIZE])
        ours = [(a.astype(np.float64) - b) / rate for a, b in zip(moved, session.get_weights())]
    with torch.no_grad():
        for parameter, value in zip(torch_model.parameters(), moved):
            parameter.copy_(torch.from_numpy(value))
    loss = torch_loss("mse", "mean", torch_model, torch.from_numpy(x[:BATCH_SIZE]),
                      torch.from_numpy(y[:BATCH_SIZE]))
    proximal = sum(((p - torch.from_numpy(r)) ** 2).sum()
                   for p, r in zip(torch_model.parameters(), reference))
    (loss + MU / 2 * proximal).backward()
    for ours_grad, parameter in zip(ours, torch_model.parameters()):
        np.testing.assert_allclose(ours_grad, parameter.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_proximal_mu_is_checked_and_set_reference_needs_it():
    sizes, activations, _ = ARCHITECTURES["regression"]
    mt_model = make_microtrain_model(sizes, activations, make_torch_model(sizes, activations))
    with microtrain.TrainSession(mt_model) as session:
        for bad in (-0.1, float("nan"), float("inf"), 1e39, "x"):
            with pytest.raises(ValueError, match="proximal_mu"):
                session.compile("sgd", "mse", proximal_mu=bad)
        session.compile("sgd", "mse")
        assert session.memory_plan()["reference_bytes"] == 0
        with pytest.raises(RuntimeError, match="proximal term"):
            session.set_reference()
        weight_bytes = session.memory_plan()["weight_bytes"]
        total = session.memory_plan()["total_bytes"]
        session.compile("sgd", "mse", proximal_mu=0.01)
        assert session.memory_plan()["reference_bytes"] == weight_bytes
        assert session.memory_plan()["total_bytes"] == total + weight_bytes
        assert session.config["proximal_mu"] == 0.01


def test_fedprox_client_resumed_from_a_checkpoint_takes_the_same_steps(tmp_path):
    """A checkpoint with optimizer state keeps the reference (format version 3): a client
    resumed mid-round, whatever its own reference was, continues bit for bit like the one
    that never stopped; a session without the term loads it too."""
    torch_model, mt_model, x, labels, start = both_models("classifier")
    path = str(tmp_path / "client.ckpt")
    steps = list(batches())
    optimizer = optimizers.SGD(learning_rate=0.05, momentum=0.9)

    def compiled(session, mu):
        session.compile(optimizer, "sparse_categorical_crossentropy", batch_size=BATCH_SIZE,
                        proximal_mu=mu)

    with microtrain.TrainSession(mt_model) as kept, microtrain.TrainSession(mt_model) as resumed:
        compiled(kept, MU)
        kept.set_weights(start)
        kept.set_reference()
        for first, stop in steps[:3]:
            kept.train_step(x[first:stop], labels[first:stop])
        kept.save_checkpoint(path)
        with open(path, "rb") as handle:
            assert handle.read(6)[4:] == b"\x03\x00"  # version 3: the reference is in
        compiled(resumed, MU)
        resumed.set_reference()  # the image's weights: not the round's global model
        resumed.load_checkpoint(path)
        for first, stop in steps[3:]:
            kept.train_step(x[first:stop], labels[first:stop])
            resumed.train_step(x[first:stop], labels[first:stop])
        for a, b in zip(kept.get_weights(), resumed.get_weights()):
            np.testing.assert_array_equal(a, b)
    with microtrain.TrainSession(mt_model) as plain:
        compiled(plain, 0.0)
        plain.load_checkpoint(path)  # no proximal term: the reference is skipped
