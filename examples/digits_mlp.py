"""Train an MLP on scikit-learn's bundled 8x8 digits with the microtrain C core.

    python examples/digits_mlp.py [--epochs 20] [--batch-size 16] [--learning-rate 0.002]

The model is 64 -> 32 relu -> 10 softmax, trained with Adam on categorical
cross-entropy, in the fixed arena whose exact size the core plans up front.
Exits with status 1 if the final validation accuracy is below 0.95.
"""

import argparse
import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import microtrain
from microtrain import layers, optimizers

REQUIRED_ACCURACY = 0.95


def load_data(seed):
    digits = load_digits()  # bundled with scikit-learn: no download
    x = (digits.data / 16.0).astype(np.float32)  # pixels 0..16 -> 0..1
    one_hot = np.eye(10, dtype=np.float32)[digits.target]
    return train_test_split(x, one_hot, test_size=0.2, random_state=seed,
                            stratify=digits.target)


def evaluate(session, x, y, batch_size):
    """Mean loss and accuracy over a whole split, batch by batch (the last may be partial)."""
    session.reset_metrics()
    weighted_loss = 0.0
    result = None
    for start in range(0, len(x), batch_size):
        stop = min(start + batch_size, len(x))
        result = session.eval_step(x[start:stop], y[start:stop], reset_metrics=False)
        weighted_loss += result["loss"][0] * (stop - start)
    return weighted_loss / len(x), result["metrics"]["categorical_accuracy"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=0.002)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    x_train, x_val, y_train, y_val = load_data(args.seed)
    model = microtrain.Sequential(
        [layers.Dense(32, activation="relu"), layers.Dense(10), layers.Softmax()],
        input_shape=(64,), seed=args.seed)

    with microtrain.TrainSession(model) as session:
        session.compile(optimizer=optimizers.Adam(learning_rate=args.learning_rate),
                        loss="categorical_crossentropy", metrics=["categorical_accuracy"],
                        batch_size=args.batch_size)
        plan = session.memory_plan()
        print("model image: %d bytes; arena: %d bytes (weights %d, gradients %d, "
              "optimizer %d, activations %d + %d, io %d, metadata %d)"
              % (len(model.to_bytes()), plan["total_bytes"], plan["weight_bytes"],
                 plan["gradient_bytes"], plan["optimizer_bytes"], plan["activation_bytes"],
                 plan["activation_grad_bytes"], plan["io_bytes"], plan["metadata_bytes"]))
        print("train %d samples, validate %d; batch %d"
              % (len(x_train), len(x_val), args.batch_size))

        rng = np.random.default_rng(args.seed)
        accuracy = 0.0
        for epoch in range(1, args.epochs + 1):
            order = rng.permutation(len(x_train))
            x_epoch, y_epoch = x_train[order], y_train[order]
            loss_sum = 0.0
            for start in range(0, len(x_epoch), args.batch_size):
                stop = min(start + args.batch_size, len(x_epoch))
                result = session.train_step(x_epoch[start:stop], y_epoch[start:stop])
                loss_sum += result["loss"][0] * (stop - start)
            session.set_epoch(epoch)
            val_loss, accuracy = evaluate(session, x_val, y_val, args.batch_size)
            print("epoch %2d  train loss %.4f  val loss %.4f  val accuracy %.4f"
                  % (epoch, loss_sum / len(x_train), val_loss, accuracy))

        predictions = np.concatenate([
            session.infer(x_val[start:start + args.batch_size])[0]
            for start in range(0, len(x_val), args.batch_size)])
        infer_accuracy = float(np.mean(predictions.argmax(1) == y_val.argmax(1)))
        assert abs(infer_accuracy - accuracy) < 1e-9, "infer and eval_step disagree"

    print("final validation accuracy: %.4f" % accuracy)
    if accuracy < REQUIRED_ACCURACY:
        print("FAILED: below %.2f" % REQUIRED_ACCURACY)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
