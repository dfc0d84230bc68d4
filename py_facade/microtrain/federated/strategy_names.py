"""The Flower strategies a fleet runs, by command-line name (no Flower import: ``microtrain
fleet --help`` lists them on a machine without Flower)."""

# command-line name -> Flower strategy class name (flwr.serverapp.strategy)
STRATEGIES = {"fedavg": "FedAvg", "fedavgm": "FedAvgM", "fedprox": "FedProx",
              "fedadam": "FedAdam", "fedadagrad": "FedAdagrad", "fedyogi": "FedYogi",
              "fedmedian": "FedMedian", "fedtrimmedavg": "FedTrimmedAvg", "krum": "Krum",
              "multikrum": "MultiKrum", "bulyan": "Bulyan", "qfedavg": "QFedAvg"}
