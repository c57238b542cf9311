"""A call's arguments in the layout of the call apply() traced. apply traces a module for the call
it is given, say model(ids); a user's script calls model(input_ids=ids), as transformers' own code
and a tokenizer's `model(**inputs)` do, or the reverse. Both bind to the same parameters of the
forward, so the call is put in the traced call's layout (each argument by position or by name, as
traced) and runs the traced graph. A call that binds other parameters (one the traced call left
out, unless it is passed as that parameter's very default), or does not bind at all, has no layout
and runs the module's own forward.

Plain Python over the forward's parameters, read once at apply: torch.compile traces it with the
rest of the dispatcher, where binding through inspect.Signature would break its graph.
"""
import inspect

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class CallLayout:
    def __init__(self, forward, traced_positional, traced_keywords):
        """`forward`: the module's own forward; the traced call had `traced_positional` arguments by
        position and `traced_keywords` (names) by name."""
        try:
            parameters = list(inspect.signature(forward).parameters.values())
        except (TypeError, ValueError):  # no signature to read (a builtin, say): no layout
            parameters = []
        self.positional = tuple(p.name for p in parameters if p.kind in _POSITIONAL)
        self.positional_only = frozenset(p.name for p in parameters if p.kind == inspect.Parameter.POSITIONAL_ONLY)
        self.named = frozenset(p.name for p in parameters if p.kind != inspect.Parameter.VAR_POSITIONAL)
        self.var_keyword = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters)
        self.defaults = {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}
        # A traced call that reached *args has no names to arrange by.
        self.usable = bool(parameters) and traced_positional <= len(self.positional)
        self.traced_positional = self.positional[:traced_positional]
        self.traced_keywords = tuple(traced_keywords)
        self.traced = frozenset(self.traced_positional) | frozenset(self.traced_keywords)

    def _values(self, args, kwargs):
        """{parameter or keyword name: value} of the call, or None where it does not bind."""
        if len(args) > len(self.positional):
            return None
        values = dict(zip(self.positional, args))
        for name, value in kwargs.items():
            if name in values or name in self.positional_only or (name not in self.named and not self.var_keyword):
                return None
            values[name] = value
        return values

    def _take(self, values, names):
        """The values of `names`, a default where the call left one out; None where one has none."""
        taken = []
        for name in names:
            if name in values:
                taken.append(values[name])
            elif name in self.defaults:
                taken.append(self.defaults[name])
            else:
                return None
        return taken

    def arrange(self, args, kwargs):
        """(args, kwargs) in the traced call's layout, or None (see the module's doc)."""
        if not self.usable:
            return None
        values = self._values(args, kwargs)
        if values is None:
            return None
        for name, value in values.items():
            if name not in self.traced and not (name in self.defaults and value is self.defaults[name]):
                return None
        positional, keywords = self._take(values, self.traced_positional), self._take(values, self.traced_keywords)
        if positional is None or keywords is None:
            return None
        return tuple(positional), dict(zip(self.traced_keywords, keywords))
