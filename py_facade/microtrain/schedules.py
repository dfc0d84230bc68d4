"""Learning-rate schedules (pure Python, MicroPython-safe).

A schedule maps the optimizer step counter (optimizer steps taken, as the C core
counts them and checkpoints store them) to a learning rate:

    lr(step) = initial_lr * factor(step)

This is ONNX Runtime's design (``LinearLRScheduler`` reads the optimizer's step,
not a counter of its own), so a resumed session continues its schedule exactly.
Factors and rates are rounded to float32 at the same points as ONNX Runtime's
C++ code, so the rates are bit-identical to it.

With a session (ONNX Runtime's ``RegisterLinearLRScheduler`` semantics):

    sess.register_lr_scheduler(LinearLRScheduler(warmup_step_count=10,
                                                 total_step_count=100))
    for x, y in loader:
        sess.train_step(x, y)          # one optimizer step: step counter + 1
        sess.scheduler_step()          # lr = initial_lr * factor(step counter)

Registering sets the rate for the session's current step counter (``initial_lr`` before
any step; ``initial_lr`` None takes the session's base rate: the compiled one, or the one
a loaded checkpoint's run used); ``scheduler_step()`` then recomputes it from the step
counter. ``Session.train(scheduler=...)`` does both. So a new scheduler built the same way
and registered on a session resumed from a checkpoint continues the schedule exactly.
"""

import math
import struct

def f32(value):
    """``value`` rounded to the nearest float32 (as a Python float). struct.pack, not
    struct.Struct: MicroPython has no Struct."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _check_count(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError("%s must be an integer >= %d, got %r" % (name, minimum, value))
    return value


def _check_rate(name, value, allow_none):
    if value is None and allow_none:
        return None
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be a number, got %r" % (name, value))
    if rate != rate or rate < 0.0 or rate == float("inf"):
        raise ValueError("%s must be a finite number >= 0, got %r" % (name, value))
    return rate



def _check_warmup(warmup_step_count, total_step_count):
    """(warmup, total) step counts, checked: whole, not negative, the warmup within the total"""
    warmup = _check_count("warmup_step_count", warmup_step_count, 0)
    total = _check_count("total_step_count", total_step_count, 0)
    if warmup > total:
        raise ValueError("warmup_step_count (%d) exceeds total_step_count (%d)"
                         % (warmup_step_count, total_step_count))
    return warmup, total

class LRScheduler:
    """Base class: subclasses define ``factor(step)``; ``initial_lr`` None = take the
    session's learning rate when the scheduler is registered."""

    def __init__(self, initial_lr=None):
        self.initial_lr = _check_rate("initial_lr", initial_lr, True)

    def factor(self, step):
        """The multiplier of ``initial_lr`` after ``step`` optimizer steps (float)."""
        raise NotImplementedError("%s does not define factor()" % type(self).__name__)

    def learning_rate(self, step):
        """The float32 learning rate after ``step`` optimizer steps."""
        if self.initial_lr is None:
            raise ValueError("this scheduler has no initial_lr yet: give one, or register it "
                             "with a session to use the session's learning rate")
        step = _check_count("step", step, 0)
        return f32(f32(self.initial_lr) * f32(self.factor(step)))

    def __repr__(self):
        return "%s(initial_lr=%r)" % (type(self).__name__, self.initial_lr)


class LinearLRScheduler(LRScheduler):
    """Linear warm-up from 0 to ``initial_lr`` over ``warmup_step_count`` steps, then
    linear decay to 0 at ``total_step_count`` (ONNX Runtime's LinearLRScheduler):

        factor(step) = step / max(1, warmup)                        step < warmup
                     = max(0, (total - step) / max(1, total - warmup))  otherwise
    """

    def __init__(self, warmup_step_count, total_step_count, initial_lr=None):
        LRScheduler.__init__(self, initial_lr)
        self.warmup_step_count, self.total_step_count = _check_warmup(warmup_step_count,
                                                                      total_step_count)

    def factor(self, step):
        warmup = f32(self.warmup_step_count)
        if f32(step) < warmup:
            return f32(f32(step) / max(1.0, warmup))
        remaining = f32(f32(self.total_step_count) - f32(step))
        post_warmup = f32(f32(self.total_step_count) - warmup)
        return max(0.0, f32(remaining / max(1.0, post_warmup)))

    def __repr__(self):
        return "LinearLRScheduler(warmup_step_count=%d, total_step_count=%d, initial_lr=%r)" % (
            self.warmup_step_count, self.total_step_count, self.initial_lr)


class CosineLRScheduler(LRScheduler):
    """Linear warm-up as LinearLRScheduler, then a half cosine from ``initial_lr`` down
    to ``min_lr`` at ``total_step_count`` (held there afterwards):

        factor(step) = step / max(1, warmup)                        step < warmup
        lr(step)     = min_lr + (initial_lr - min_lr) * (1 + cos(pi * p)) / 2
                       with p = min(1, (step - warmup) / max(1, total - warmup))
    """

    def __init__(self, warmup_step_count, total_step_count, initial_lr=None, min_lr=0.0):
        LRScheduler.__init__(self, initial_lr)
        self.warmup_step_count, self.total_step_count = _check_warmup(warmup_step_count,
                                                                      total_step_count)
        self.min_lr = _check_rate("min_lr", min_lr, False)

    def factor(self, step):
        if step < self.warmup_step_count:
            return float(step) / max(1, self.warmup_step_count)
        progress = float(step - self.warmup_step_count) / max(
            1, self.total_step_count - self.warmup_step_count)
        if progress > 1.0:
            progress = 1.0
        cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
        if not self.initial_lr:
            return cosine
        floor = self.min_lr / self.initial_lr
        return floor + (1.0 - floor) * cosine

    def __repr__(self):
        return ("CosineLRScheduler(warmup_step_count=%d, total_step_count=%d, initial_lr=%r, "
                "min_lr=%r)" % (self.warmup_step_count, self.total_step_count, self.initial_lr,
                                self.min_lr))


class StepLRScheduler(LRScheduler):
    """Step decay (torch.optim.lr_scheduler.StepLR over optimizer steps), after an optional
    linear warm-up as LinearLRScheduler's:

        factor(step) = step / max(1, warmup)                     step < warmup
                     = gamma ** ((step - warmup) // step_size)   otherwise
    """

    def __init__(self, step_size, gamma=0.1, initial_lr=None, warmup_step_count=0):
        LRScheduler.__init__(self, initial_lr)
        self.step_size = _check_count("step_size", step_size, 1)
        self.gamma = _check_rate("gamma", gamma, False)
        self.warmup_step_count = _check_count("warmup_step_count", warmup_step_count, 0)

    def factor(self, step):
        if step < self.warmup_step_count:
            return float(step) / max(1, self.warmup_step_count)
        return self.gamma ** ((step - self.warmup_step_count) // self.step_size)

    def __repr__(self):
        return "StepLRScheduler(step_size=%d, gamma=%r, initial_lr=%r, warmup_step_count=%d)" % (
            self.step_size, self.gamma, self.initial_lr, self.warmup_step_count)


ALIASES = {"linear": LinearLRScheduler, "cosine": CosineLRScheduler, "step": StepLRScheduler}
