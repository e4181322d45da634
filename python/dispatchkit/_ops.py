"""dispatchkit.ops: every operator the dispatcher knows, by namespace, as in ``torch.ops``:
``dk.ops.dk.add`` (all overloads, tried in order), ``dk.ops.dk.add.Tensor`` (one),
``dk.ops.dk.relu.default`` (the overload with no name), ``dk.ops.myns.myop`` once a library
defines it. Arguments keep the schema's names (``self``, not ``input``)."""

from dispatchkit import _C


class _OpNamespace:
    def __init__(self, name):
        self.name = name

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        try:
            packet = _C._op_packet(f"{self.name}::{op_name}")
        except AttributeError:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'") from None
        # Not cached: a library defined later, or destroyed, is seen on the next lookup.
        return packet

    def __repr__(self):
        return f"<operator namespace {self.name}>"


class _Ops:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _OpNamespace(name)

    def __repr__(self):
        return "dispatchkit.ops"


ops = _Ops()
