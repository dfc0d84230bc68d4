"""ONNX ``Loop`` and ``If`` on constants, evaluated node by node with the importer's own
constant folding, so that every node of a body is sized and charged to the import's
``FoldBudget`` before it runs: a Loop of 10^12 iterations is refused by name when the work
it has done reaches the budget, instead of running for ever. A mixin of
``onnx_constants.ConstantFolding`` (which supplies ``evaluate`` and ``budget``).

Semantics (ONNX Loop, opset 11 on): inputs M (trip count, optional), cond (optional) and
the loop-carried values; the body takes (iteration number, condition, carried values) and
gives (condition, carried values, scan outputs); the Loop's outputs are the final carried
values and each scan output stacked over the iterations. If runs the branch its condition
names. A body reads names of the graphs around it (constants only) as ONNX allows.
"""

import numpy as np

from .budget import MAX_NODES, NODE_WORK
from .graph import ConversionError


class _Scope:
    """The names a (sub)graph has bound, over the scope around it (``outer``: a _Scope, or
    a function(name, label) for the main graph's constants)."""

    def __init__(self, outer):
        self.outer = outer
        self.names = {}

    def bind(self, name, array, label):
        if name in self.names:
            raise ConversionError("%r is written twice in one subgraph (not SSA)" % name,
                                  op=label)
        self.names[name] = array

    def __call__(self, name, label):
        if name in self.names:
            return self.names[name]
        return self.outer(name, label)


def _scalar(array, what, label):
    array = np.asarray(array)
    if array.size != 1:
        raise ConversionError("%s has %d elements, not one" % (what, array.size), op=label)
    return array.reshape(-1)[0]


class SubgraphFolding:
    def fold_subgraph(self, node, arrays, label, scope, attrs):
        if node.op_type == "If":
            taken = "then_branch" if bool(_scalar(arrays[0], "the condition", label)) else \
                "else_branch"
            branch = attrs.get(taken)
            if branch is None:
                raise ConversionError("If has no %s" % taken, op=label)
            inner = self.run_graph(branch, [], "%s, %s" % (label, taken), scope)
            return [inner(o.name, label) for o in branch.output]
        return self._loop(node, arrays, label, scope, attrs)

    def _loop(self, node, arrays, label, scope, attrs):
        body = attrs.get("body")
        arrays = list(arrays) + [None] * (2 - len(arrays))
        carried = list(arrays[2:])
        if body is None or len(body.input) != 2 + len(carried) or \
                len(body.output) < 1 + len(carried):
            raise ConversionError("the body takes %s inputs and gives %s outputs for %d "
                                  "loop-carried values" % (
                                      "no" if body is None else len(body.input),
                                      "no" if body is None else len(body.output),
                                      len(carried)), op=label)
        if any(a is None for a in carried):
            raise ConversionError("a loop-carried value is absent", op=label)
        trips = None if arrays[0] is None else int(_scalar(arrays[0], "M", label))
        going = True if arrays[1] is None else bool(_scalar(arrays[1], "cond", label))
        scans = [[] for _ in range(len(body.output) - 1 - len(carried))]
        scan_bytes = 0
        iteration = 0
        while going and (trips is None or iteration < trips):
            what = "%s, iteration %d" % (label, iteration)
            self.budget.allow(what, 0, 0, overhead=NODE_WORK)
            inner = self.run_graph(body, [np.array(iteration, np.int64), np.array(going)] +
                                   carried, what, scope)
            outputs = [inner(o.name, what) for o in body.output]
            going = bool(_scalar(outputs[0], "the body's condition", what))
            carried = outputs[1:1 + len(carried)]
            for stack, array in zip(scans, outputs[1 + len(carried):]):
                stack.append(np.asarray(array))
                scan_bytes += stack[-1].nbytes
            self.budget.allow(what, scan_bytes + sum(np.asarray(c).nbytes for c in carried),
                              0, overhead=0)
            iteration += 1
        if scans and iteration == 0:
            raise ConversionError("the loop runs no iteration, so its scan outputs have no "
                                  "shape", op=label)
        try:
            stacked = [np.stack(stack) for stack in scans]
        except ValueError:
            raise ConversionError("a scan output changes shape between iterations",
                                  op=label) from None
        return carried + stacked

    def run_graph(self, graph, inputs, label, outer):
        """Evaluate every node of a subgraph on constants; returns its scope."""
        scope = _Scope(outer)
        if len(graph.node) > MAX_NODES:
            raise ConversionError("the subgraph has %d nodes; at most %d are evaluated"
                                  % (len(graph.node), MAX_NODES), op=label)
        if len(inputs) != len(graph.input):
            raise ConversionError("the subgraph takes %d inputs, given %d"
                                  % (len(graph.input), len(inputs)), op=label)
        for tensor in graph.initializer:
            scope.bind(tensor.name, self.tensor_array(tensor, label), label)
        for graph_input, array in zip(graph.input, inputs):
            scope.bind(graph_input.name, array, label)
        for position, node in enumerate(graph.node):
            name = " %r" % node.name if node.name else ""
            where = "%s, node %d (%s%s)" % (label, position, node.op_type, name)
            if node.domain not in ("", "ai.onnx"):
                raise ConversionError("domain %r is not supported" % node.domain, op=where,
                                      supported="the default ONNX domain")
            arrays = [scope(n, where) if n else None for n in node.input]
            results = self.evaluate(node, arrays, where, scope)
            for output_name, array in zip(node.output, results):
                if output_name and array is not None:
                    scope.bind(output_name, array, where)
        return scope
