"""Non-IID splits of a data set over a fleet of clients, seeded (numpy).

    parts = split_labels(labels, clients=100, method="dirichlet", alpha=0.5, seed=0)
    parts = split_labels(labels, clients=10, method="label", classes_per_client=2, seed=0)

``parts[i]`` is the sorted array of row indices of client ``i``. Every row goes to exactly
one client and every client gets at least one row (a client the draw leaves empty takes one
row from the largest client), so each can train. The same arguments give the same split on
every run and in every process (a simulation's workers recompute it).

* ``"dirichlet"``: for every class, the proportions of its rows per client are drawn from
  Dirichlet(α, ..., α) (Hsu et al., 2019); small α gives each client few classes, large α
  approaches an IID split.
* ``"label"``: label skew by shards; client i holds ``classes_per_client`` classes, i·k ..
  i·k + k − 1 modulo the number of classes, and the rows of each class are divided evenly
  among the clients holding it (McMahan et al.'s pathological non-IID split).
* ``"iid"``: a seeded shuffle cut into equal parts.
"""

import numpy as np

METHODS = ("dirichlet", "label", "iid")


def class_ids(y):
    """Integer class of each row: y itself ([N] labels) or the argmax of one-hot rows."""
    y = np.asarray(y)
    if y.ndim == 1:
        return y.astype(np.int64)
    return y.reshape(len(y), -1).argmax(axis=1).astype(np.int64)


def split_labels(labels, clients, method="dirichlet", alpha=0.5, classes_per_client=2, seed=0):
    """Row indices of each of ``clients`` clients (see the module doc)."""
    labels = class_ids(labels)
    clients = int(clients)
    if clients < 1:
        raise ValueError("clients must be at least 1, got %r" % (clients,))
    if clients > len(labels):
        raise ValueError("%d clients cannot each get a row of %d" % (clients, len(labels)))
    if method not in METHODS:
        raise ValueError("unknown split %r; choose %s" % (method, ", ".join(METHODS)))
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    owners = [[] for _ in range(clients)]
    if method == "iid":
        for client, rows in enumerate(np.array_split(rng.permutation(len(labels)), clients)):
            owners[client].extend(rows.tolist())
    elif method == "dirichlet":
        if not alpha > 0:
            raise ValueError("alpha must be > 0, got %r" % (alpha,))
        for label in classes:
            rows = rng.permutation(np.flatnonzero(labels == label))
            shares = rng.dirichlet(np.full(clients, float(alpha)))
            cuts = (np.cumsum(shares)[:-1] * len(rows)).astype(np.int64)
            for client, part in enumerate(np.split(rows, cuts)):
                owners[client].extend(part.tolist())
    else:
        k = int(classes_per_client)
        if not 1 <= k <= len(classes):
            raise ValueError("classes_per_client must be in 1..%d, got %r"
                             % (len(classes), classes_per_client))
        holders = {int(label): [] for label in classes}
        for client in range(clients):
            for j in range(k):
                holders[int(classes[(client * k + j) % len(classes)])].append(client)
        for label in classes:
            rows = rng.permutation(np.flatnonzero(labels == label))
            holding = holders[int(label)]
            if not holding:  # fewer clients than classes: a class nobody drew goes round
                holding = [int(label) % clients]
            for client, part in zip(holding, np.array_split(rows, len(holding))):
                owners[client].extend(part.tolist())
    for client in range(clients):  # nobody left without a row
        if not owners[client]:
            donor = max(range(clients), key=lambda c: (len(owners[c]), -c))
            owners[client].append(owners[donor].pop())
    return [np.array(sorted(rows), dtype=np.int64) for rows in owners]


def describe(parts, labels):
    """Rows and classes per client, for a log line: (sizes, classes held)."""
    labels = class_ids(labels)
    return [len(p) for p in parts], [len(np.unique(labels[p])) for p in parts]
