"""A Triton kernel file and its launch mapping (AK_LAUNCH), loaded and checked.

A kernel file (kernels/triton/<op>.py) holds @triton.jit kernels, its tuning parameters as
module-level assignments (`BLOCK_N = 4096`, set by the engine's -D choices, as #define defaults
are in a .cu file) and one dict, AK_LAUNCH, that maps an ABI call onto the kernels:

    AK_LAUNCH = {
        "inputs": {"x": "T", "weight": "T"},     # ABI order; "T": the call's dtype
        "outputs": {"y": "T"},                   # or a fixed dtype: fp16 bf16 fp32 i32 i64
        "scalars": ["eps"],
        "dims": {"M": "x.shape[0]", "N": "x.shape[1]"},     # names for expressions (optional)
        "require": ["x.stride[1] == 1"],         # else the call is AK_ERR_UNSUPPORTED (optional)
        "dtypes": ["fp16", "bf16", "fp32"],      # what T may be (optional; these three)
        "scratch": {"h": ("T", "M", "F")},       # stream-ordered temporaries (optional)
        "launches": [step, ...],                 # run in order on call->stream
    }

A step is one launch, or a list of alternatives of which the first whose "when" holds (and whose
"dtypes" hold T) runs. A launch:

    {"kernel": rmsnorm_row, "when": "N <= BLOCK_N", "grid": ("M",),
     "args": {"x_ptr": "x", "n_cols": "N", "eps": "eps", ...},   # every non-constexpr parameter
     "constexprs": {"BLOCK_N": BLOCK_N},                           # every constexpr parameter
     "num_warps": NUM_WARPS, "num_stages": 1,
     "aligned": ["x_ptr", "n_cols"],   # a second build assuming these divisible by 16 (pointers:
                                       # 16-byte aligned), taken when a call satisfies it
     "unaligned": True}                # also build without those assumptions (default)

Expressions are those of expr.py. Everything wrong here is a SpecError naming a line of the
file, which the engine reports as a compile error.
"""
import ast
import inspect
import sys
import traceback
import types

from autokernel_triton.expr import Expr, ExprError, Names

DTYPES = {"fp32": (0, 4), "fp16": (1, 2), "bf16": (2, 2), "i32": (3, 4), "i64": (4, 8)}  # code, bytes
FLOAT_DTYPES = ("fp16", "bf16", "fp32")
LAUNCH_KEYS = {"kernel", "when", "grid", "args", "constexprs", "num_warps", "num_stages", "aligned",
               "unaligned", "dtypes"}
TOP_KEYS = {"inputs", "outputs", "scalars", "dims", "require", "dtypes", "scratch", "launches"}


class SpecError(Exception):
    def __init__(self, line, message):
        super().__init__(message)
        self.line, self.message = line, message


class Tensor:
    def __init__(self, name, role, index, dtype, shape=None):
        self.name, self.role, self.index, self.dtype, self.shape = name, role, index, dtype, shape

    def resolved_dtype(self, t):
        return t if self.dtype == "T" else self.dtype


class Arg:
    """A kernel parameter and what it receives: `kind` is pointer, i32, i64 or fp32."""

    def __init__(self, name, expr, kind, tensor=None):
        self.name, self.expr, self.kind, self.tensor = name, expr, kind, tensor


class Launch:
    def __init__(self, **fields):
        self.__dict__.update(fields)


class Spec:
    def __init__(self, **fields):
        self.__dict__.update(fields)

    @property
    def tensors(self):
        return self.inputs + self.outputs + self.scratch

    def launches(self):
        return [launch for step in self.steps for launch in step]


def load_module(path, defines):
    """Executes the kernel file with `defines` (name -> value text) replacing its module-level
    assignments of those names. Returns (module, syntax tree)."""
    source = path.read_text()
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as e:
        raise SpecError(e.lineno or 1, f"syntax error: {e.msg}") from None
    remaining = dict(defines)
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in remaining:
                node.value = ast.copy_location(ast.Constant(_value(remaining.pop(name))), node.value)
    if remaining:
        name = sorted(remaining)[0]
        raise SpecError(1, f"tuning value {name}={remaining[name]}: the file has no module-level "
                           f"`{name} = ...` for it to replace")
    ast.fix_missing_locations(tree)
    module = types.ModuleType(f"ak_triton_{path.stem}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # Triton looks a kernel's module up by name
    try:
        exec(compile(tree, str(path), "exec"), module.__dict__)
    except Exception as e:  # the file's own error, reported at its line
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == str(path)]
        raise SpecError(frames[-1].lineno if frames else 1, f"{type(e).__name__}: {e}") from None
    return module, tree


def _value(text):
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


class _Locator:
    """Lines of the file for error messages: where AK_LAUNCH starts, and where a string of it
    (a key or an expression) first appears from there on."""

    def __init__(self, tree):
        self.start = next((n.lineno for n in tree.body if isinstance(n, ast.Assign)
                           and any(getattr(t, "id", None) == "AK_LAUNCH" for t in n.targets)), 1)
        self.strings = [(n.lineno, str(n.value)) for n in ast.walk(tree) if isinstance(n, ast.Constant)]
        self.names = [(n.lineno, n.id) for n in ast.walk(tree) if isinstance(n, ast.Name)]

    def name_line(self, name):
        """The first line from AK_LAUNCH on that names `name` (a launch's kernel)."""
        found = sorted(line for line, value in self.names if value == name and line >= self.start)
        return found[0] if found else self.start

    def line(self, text, after=None):
        """The first line from `after` on (else anywhere: a helper above AK_LAUNCH may build the
        launches) that holds the constant `text` (a string, or a number written so); `after`
        itself when none does."""
        after = after or self.start
        lines = sorted(line for line, value in self.strings if value == text)
        later = [line for line in lines if line >= after]
        return (later or lines or [after])[0]


def kernel_params(kernel):
    """[(name, is_constexpr, has_default)] of a @triton.jit function (or its interpreted form)."""
    fn = getattr(kernel, "fn", kernel)
    params = []
    for p in inspect.signature(fn).parameters.values():
        annotation = p.annotation
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        params.append((p.name, text.split(".")[-1] == "constexpr", p.default is not inspect.Parameter.empty))
    return params


def kernel_line(kernel):
    """The line of a kernel's `def` (its decorators come first)."""
    fn = getattr(kernel, "fn", kernel)
    lines, start = inspect.getsourcelines(fn)
    return start + next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), 0)


def parse_spec(path, module, tree):
    at = _Locator(tree)
    mapping = getattr(module, "AK_LAUNCH", None)
    if not isinstance(mapping, dict):
        raise SpecError(1, "no AK_LAUNCH dict: the mapping from the ABI call to the kernels' arguments and grid")
    for key in mapping:
        if key not in TOP_KEYS:
            raise SpecError(at.line(key), f"AK_LAUNCH has no key '{key}' (keys: {', '.join(sorted(TOP_KEYS))})")
    builder = _Builder(path, mapping, at)
    return builder.build()


class _Builder:
    def __init__(self, path, mapping, at):
        self.path, self.mapping, self.at = path, mapping, at

    def fail(self, text, message, after=None):
        raise SpecError(self.at.line(text, after) if isinstance(text, str) else self.at.start, message)

    def expr(self, text, names, after=None):
        try:
            return Expr(text, names)
        except ExprError as e:
            self.fail(e.text, f"expression {e}", after)

    def tensors(self, key, role):
        entries = self.mapping.get(key, {})
        if not isinstance(entries, dict) or (role == "input" and not entries):
            self.fail(key, f"AK_LAUNCH['{key}'] is a dict of tensor name -> dtype ('T' or fp16, ...)")
        tensors = []
        for index, (name, dtype) in enumerate(entries.items()):
            if dtype != "T" and dtype not in DTYPES:
                self.fail(name, f"tensor {name}: dtype '{dtype}' is not T or one of {', '.join(DTYPES)}")
            tensors.append(Tensor(name, role, index, dtype))
        return tensors

    def build(self):
        m = self.mapping
        inputs, outputs = self.tensors("inputs", "input"), self.tensors("outputs", "output")
        scalars = list(m.get("scalars", []))
        dtypes = list(m.get("dtypes", FLOAT_DTYPES))
        for t in dtypes:
            if t not in FLOAT_DTYPES:
                self.fail("dtypes", f"dtypes: '{t}' is not fp16, bf16 or fp32")
        scratch = [Tensor(name, "scratch", i, *self._scratch_entry(name, entry))
                   for i, (name, entry) in enumerate(m.get("scratch", {}).items())]
        all_tensors = inputs + outputs + scratch
        names = [t.name for t in all_tensors] + scalars
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            self.fail(sorted(duplicates)[0], f"name {sorted(duplicates)[0]} is used twice")
        base = Names({t.name: f"f.t_{t.name}" for t in all_tensors}, {s: i for i, s in enumerate(scalars)})
        for name, text in m.get("dims", {}).items():
            base.dims[name] = self.expr(text, base)
        for t in scratch:
            t.shape = [self.expr(text, base) for text in t.shape]
            if len(t.shape) > 4:
                self.fail(t.name, f"scratch {t.name} has more than 4 dims")
        requires = [self.expr(text, base) for text in m.get("require", [])]
        steps = m.get("launches")
        if not isinstance(steps, list) or not steps:
            self.fail("launches", "AK_LAUNCH['launches'] is a list of steps (a launch dict or a list of them)")
        parsed = [[self.launch(l, base, dtypes) for l in (s if isinstance(s, list) else [s])] for s in steps]
        return Spec(path=self.path, inputs=inputs, outputs=outputs, scalars=scalars, dims=base.dims,
                    requires=requires, dtypes=dtypes, scratch=scratch, steps=parsed, names=base,
                    locator=self.at)

    def _scratch_entry(self, name, entry):
        if not isinstance(entry, (tuple, list)) or len(entry) < 2:
            self.fail(name, f"scratch {name} is (dtype, dim expression, ...)")
        if entry[0] != "T" and entry[0] not in DTYPES:
            self.fail(name, f"scratch {name}: dtype '{entry[0]}' is not T or one of {', '.join(DTYPES)}")
        return entry[0], [str(d) for d in entry[1:]]

    def launch(self, launch, base, spec_dtypes):
        if not isinstance(launch, dict) or "kernel" not in launch:
            self.fail("launches", "a launch is a dict with at least 'kernel', 'grid' and 'args'")
        kernel = launch["kernel"]
        if not callable(getattr(kernel, "fn", None)):
            self.fail("launches", f"launch kernel {kernel!r} is not a @triton.jit function")
        name = kernel.fn.__name__
        after = self.at.name_line(name)  # this launch's strings are found from its kernel's line on
        for key in launch:
            if key not in LAUNCH_KEYS:
                self.fail(key, f"launch of {name}: no key '{key}' (keys: {', '.join(sorted(LAUNCH_KEYS))})", after)
        params = kernel_params(kernel)
        constexprs = dict(launch.get("constexprs", {}))
        args_map = dict(launch.get("args", {}))
        self._match_params(name, params, args_map, constexprs, after)
        names = base.with_constexprs(constexprs)
        args = [self.arg(pname, args_map[pname], names, after) for pname, is_const, _ in params if not is_const]
        grid = [self.expr(text, names, after) for text in self._grid(name, launch.get("grid"), after)]
        for e in grid:
            if e.kind != "int":
                self.fail(e.text, f"launch of {name}: grid expression '{e.text}' is not an integer", after)
        aligned = list(launch.get("aligned", []))
        for arg_name in aligned:
            arg = next((a for a in args if a.name == arg_name), None)
            if arg is None or arg.kind == "fp32":
                self.fail(arg_name, f"launch of {name}: aligned names '{arg_name}', which is not an integer or "
                                    f"pointer argument of {name}", after)
        dtypes = list(launch.get("dtypes", spec_dtypes))
        if not set(dtypes) <= set(spec_dtypes):
            self.fail("dtypes", f"launch of {name}: dtypes {dtypes} are not among AK_LAUNCH's {spec_dtypes}", after)
        num_warps, num_stages = launch.get("num_warps", 4), launch.get("num_stages", 3)
        if num_warps not in (1, 2, 4, 8, 16, 32) or not isinstance(num_stages, int) or num_stages < 1:
            self.fail("num_warps", f"launch of {name}: num_warps {num_warps} (a power of two up to 32) or "
                                   f"num_stages {num_stages} (>= 1) out of range", after)
        when = launch.get("when")
        return Launch(kernel=kernel, name=name, line=kernel_line(kernel), args=args, grid=grid,
                      constexprs=constexprs, params=params, aligned=aligned,
                      unaligned=bool(launch.get("unaligned", True)) or not aligned, dtypes=dtypes,
                      num_warps=num_warps, num_stages=num_stages,
                      when=None if when is None else self.expr(when, names, after))

    def _match_params(self, name, params, args_map, constexprs, after):
        by_name = {p[0]: p for p in params}
        for key in list(args_map) + list(constexprs):
            if key not in by_name:
                self.fail(key, f"launch of {name}: '{key}' is not a parameter of {name} "
                               f"(parameters: {', '.join(by_name)})", after)
        for pname, is_const, has_default in params:
            given = constexprs if is_const else args_map
            other = args_map if is_const else constexprs
            if pname in other:
                what = "a constexpr" if is_const else "a runtime argument"
                self.fail(pname, f"launch of {name}: {pname} is {what}; give it under "
                                 f"'{'constexprs' if is_const else 'args'}'", after)
            if pname not in given and not (is_const and has_default):
                self.fail("args", f"launch of {name}: the mapping gives no value for parameter {pname}", after)

    def _grid(self, name, grid, after):
        if isinstance(grid, (str, int)):
            grid = (grid,)
        if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
            self.fail("grid", f"launch of {name}: grid is 1 to 3 expressions", after)
        return [str(g) for g in grid] + ["1"] * (3 - len(grid))

    def arg(self, pname, value, names, after):
        e = self.expr(str(value), names, after)
        if e.kind == "pointer":
            tensor = e.tree.id
            return Arg(pname, e, "pointer", tensor)
        if e.kind == "float":
            return Arg(pname, e, "fp32")
        return Arg(pname, e, "i64" if e.wide else "i32")
