

def test_digits_backbone_matches_litert_and_a_new_head_learns_digits_5_to_9():
    from sklearn.datasets import load_digits
    data = read(os.path.join(FIXTURES, "digits_backbone_int8.tflite"))
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    output_equal, report = int8_compare.compare(data, x[:8])
    assert output_equal and all(r[1] for r in report)
    keep = digits.target >= 5
    x, labels = x[keep][:320], digits.target[keep][:320] - 5
    y = np.eye(5, dtype=np.float32)[labels]
    model = microtrain.convert(data, new_head=5)
    with microtrain.TrainSession(model.to_bytes()) as session:
        session.compile(microtrain.optimizers.SGD(0.5), "categorical_crossentropy",
                        batch_size=16)
        before = np.mean(session.infer(x[240:])[0].argmax(1) == labels[240:])
        for _ in range(10):
            for first in range(0, 240, 16):
                session.train_step(x[first:first + 16], y[first:first + 16])
        after = np.mean(session.infer(x[240:])[0].argmax(1) == labels[240:])
    assert after > max(before + 0.3, 0.6), (before, after)
