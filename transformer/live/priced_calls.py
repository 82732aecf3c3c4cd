"""Engine calls with their price: what the door (`transformer.service`) hands out. A `PricedCall` runs its function
on the engine thread; where that thread is shared by a server's sessions (inside `shared_engine`, which the pages'
glue enters), it first prices the whole request (`transformer.live.prices`) and runs it there only when it is light.
A heavy one raises `NeedsLane` (its name, arguments and price) for the page to send to the background lane
(`transformer.live.heavy`) after a press; one past the hard limits raises ValueError with its figures. The lane's
result comes back through `prepaid`, so the page's own code around the call runs unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading

from transformer.live import heavy
from transformer.live.run_cost import RunCost, check_cost
from transformer.runtime.engine_thread import on_engine, on_engine_thread

_LOCAL = threading.local()  # .shared: inside shared_engine; .prepaid: {call key: result}


def _hashable(value):
    """``value`` as a hashable key: an array by its dtype, shape and bytes; lists, dicts and sets as tuples."""
    if hasattr(value, "tobytes") and hasattr(value, "shape"):
        return ("array", str(value.dtype), tuple(value.shape), value.tobytes())
    if isinstance(value, dict):
        return ("dict", tuple(sorted((key, _hashable(item)) for key, item in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_hashable(item) for item in value))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(map(repr, value))))
    return value


def call_key(name: str, args: tuple, kwargs: dict):
    """A hashable key of one call (arrays and other unhashable arguments by their contents)."""
    return (name, _hashable(args), _hashable(kwargs))


class NeedsLane(Exception):
    """A call priced over the light budget where the engine thread is shared: ``name``, ``args``, ``kwargs`` and
    ``cost`` (a `RunCost`) are what the background lane needs to run it."""

    def __init__(self, call: PricedCall, args: tuple, kwargs: dict, cost: RunCost):
        super().__init__(f"{call.name} needs the background lane: {cost.what}, {cost.text()}")
        self.call, self.name, self.args, self.kwargs, self.cost = call, call.name, args, kwargs, cost

    @property
    def memory(self) -> int:
        """The bytes its run may add to the lane's address space: twice the estimate for a model from outside (its
        file, not the lab, says what it holds), no bound for the lab's own."""
        from transformer.live.sources import source_of  # noqa: PLC0415

        configs = [value for value in (*self.args, *self.kwargs.values()) if hasattr(value, "weights")]
        return 2 * self.cost.bytes if any(source_of(config.weights).bounded for config in configs) else 0

    def keep(self, result) -> None:
        """What this server keeps of a call's result computed elsewhere (a measure, a score), as if made here."""
        if self.call.keep is not None:
            on_engine_thread(self.call.keep)(result, *self.args, **self.kwargs)


def lane_loads(args: tuple, kwargs: dict) -> frozenset:
    """``(weights, device)`` of each model whose loading is long (`ModelSource.load_seconds`) named by a call of
    these arguments (a `LiveConfig`, a patching request): the background lane's child, a process of its own, loads
    it before the run where it does not hold it (`HeavyLane.holds`)."""
    from transformer.live.sources import source_of  # noqa: PLC0415
    from transformer.runtime.device import resolve_device  # noqa: PLC0415

    named = [value for value in (*args, *kwargs.values()) if isinstance(getattr(value, "weights", None), str)]
    return frozenset((value.weights, resolve_device(getattr(value, "device", "auto"))) for value in named
                     if source_of(value.weights).load_seconds)


@contextlib.contextmanager
def shared_engine():
    """Within it, this thread's priced calls run on the engine thread only when light (`PricedCall`)."""
    before = getattr(_LOCAL, "shared", False)
    _LOCAL.shared = True
    try:
        yield
    finally:
        _LOCAL.shared = before


@contextlib.contextmanager
def prepaid(needs: NeedsLane, result):
    """Within it, the call ``needs`` named returns ``result`` (the background lane's) instead of running."""
    kept = getattr(_LOCAL, "prepaid", None)
    if kept is None:
        kept = _LOCAL.prepaid = {}
    key = call_key(needs.name, needs.args, needs.kwargs)
    kept[key] = result
    try:
        yield
    finally:
        kept.pop(key, None)


def price_of(price, function, args: tuple, kwargs: dict) -> RunCost:
    """``price`` of a call of ``function`` with ``args`` and ``kwargs``, given them by name (defaults filled in);
    ValueError when they do not fit ``function``'s parameters, as the call itself would raise."""
    try:
        bound = inspect.signature(function).bind(*args, **kwargs)
    except TypeError as error:
        raise ValueError(f"{function.__name__}: {error}") from None
    bound.apply_defaults()
    named = dict(bound.arguments)
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            named.update(named.pop(name, {}))
    return price(**named)


class PricedCall:
    """``function`` as the door's ``name``, on the engine thread, with ``price`` (a function of the call's named
    arguments, `transformer.live.prices`); ``keep(result, *args, **kwargs)`` keeps a result the lane made;
    ``lane``: False for a call whose work must happen in this process (loading a model from outside)."""

    def __init__(self, name: str, function, price, keep=None, lane: bool = True):
        self.name, self.function, self.price_function, self.keep, self.lane = name, function, price, keep, lane
        self.target = f"{function.__module__}:{function.__name__}"
        self._run = on_engine_thread(function)
        self.on_engine = True
        functools.update_wrapper(self, function)
        if lane:
            heavy.allow(name, self.target)

    def price(self, *args, **kwargs) -> RunCost:
        """What this call would cost, priced on the engine thread (it reads the call's lines and models' specs);
        ValueError on arguments the call would refuse."""
        return on_engine_thread(price_of)(self.price_function, self.function, args, kwargs)

    def __call__(self, *args, **kwargs):
        if getattr(_LOCAL, "shared", False) and not on_engine():
            key = call_key(self.name, args, kwargs)
            kept = getattr(_LOCAL, "prepaid", None) or {}
            if key in kept:
                return kept[key]
            cost = self.price(*args, **kwargs)
            check_cost(cost)
            if cost.heavy and self.lane:
                raise NeedsLane(self, args, kwargs, cost)
        return self._run(*args, **kwargs)

    def __repr__(self):
        return f"PricedCall({self.name!r}, {self.target!r})"


__all__ = ["NeedsLane", "PricedCall", "call_key", "lane_loads", "prepaid", "price_of", "shared_engine"]
