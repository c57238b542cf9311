"""Cross entropy over [rows, classes] logits: F.cross_entropy (aten.cross_entropy_loss) and
nll_loss(log_softmax(x)), with their reductions and ignore_index (Hugging Face's -100 labels).

The kernel computes every row's loss; the rows whose target is ignore_index are zeroed and left
out of the mean around it, in the graph. Its targets are never read out of range: an ignored
target becomes 0 for the kernel, and any other target outside [0, classes) fails an assertion on
the device, as PyTorch's own op does.
"""
import torch

from .graph import calls, dtype, shape
from .match import Match

aten = torch.ops.aten
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _arguments(node, names, defaults):
    values = dict(defaults)
    values.update(zip(names, node.args))
    values.update(node.kwargs)
    return values


def _emit(logits, targets, reduction, ignore_index, out_dtype):
    rows, classes = shape(logits)

    def emit(e):
        valid = e(aten.ne.Scalar, targets, ignore_index)
        safe = e(aten.where.self, valid, targets, e(aten.zeros_like.default, targets))
        in_range = e(aten.logical_and.default, e(aten.ge.Scalar, safe, 0), e(aten.lt.Scalar, safe, classes))
        e(aten._assert_async.msg, e(aten.all.default, in_range), "cross_entropy: a target is outside [0, classes)")
        loss, _ = e.op("cross_entropy", [e.contiguous(logits), e.contiguous(safe)])
        loss = e(aten.where.self, valid, loss, e(aten.zeros_like.default, loss))
        if reduction == "sum":
            loss = e(aten.sum.default, loss)
        elif reduction == "mean":
            count = e(aten.sum.default, valid, dtype=torch.float32)
            loss = e(aten.div.Tensor, e(aten.sum.default, loss), count)
        return e.cast(loss, out_dtype)

    return emit


def _match(node, region, logits, targets, reduction, ignore_index, weight, smoothing, label):
    if shape(logits) is None or len(shape(logits)) != 2 or dtype(logits) not in FLOATS:
        return None
    if shape(targets) != shape(logits)[:1] or dtype(targets) != torch.int64 or weight is not None or smoothing:
        return None
    if reduction not in _REDUCTIONS:
        return None
    emit = _emit(logits, targets, _REDUCTIONS[reduction], ignore_index, dtype(node))
    return Match("cross_entropy", label, node, region, [shape(logits), shape(targets)], [], dtype(logits), emit)


def _cross_entropy(node):
    a = _arguments(node, ("input", "target", "weight", "reduction", "ignore_index", "label_smoothing"),
                   {"weight": None, "reduction": 1, "ignore_index": -100, "label_smoothing": 0.0})
    return _match(node, {node}, a["input"], a["target"], a["reduction"], a["ignore_index"], a["weight"],
                  a["label_smoothing"], "cross_entropy")


def _nll_of_log_softmax(node):
    a = _arguments(node, ("input", "target", "weight", "reduction", "ignore_index"),
                   {"weight": None, "reduction": 1, "ignore_index": -100})
    log_probs = a["input"]
    if not calls(log_probs, aten.log_softmax.int, aten._log_softmax.default) or len(log_probs.users) != 1:
        return None
    logits, dim = log_probs.args[0], log_probs.args[1]
    if shape(logits) is None or dim not in (-1, len(shape(logits)) - 1) or dtype(log_probs) != dtype(logits):
        return None
    return _match(node, {node, log_probs}, logits, a["target"], a["reduction"], a["ignore_index"], a["weight"],
                  0.0, "nll_loss(log_softmax)")


def find(info):
    matches = []
    for node in info.graph.nodes:
        if calls(node, aten.cross_entropy_loss.default):
            found = _cross_entropy(node)
        elif calls(node, aten.nll_loss.default, aten.nll_loss_nd.default):
            found = _nll_of_log_softmax(node)
        else:
            continue
        if found is not None:
            matches.append(found)
    return matches
