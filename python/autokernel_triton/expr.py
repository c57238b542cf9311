"""The small expression language of a Triton kernel's launch mapping (AK_LAUNCH).

A mapping says how an ABI call (its tensors, scalars and their shapes) becomes a Triton kernel's
arguments and grid: "x", "x.shape[1]", "cdiv(M, BLOCK_M)", "scale * 1.4426950408889634",
"causal != 0". The same parsed expression is evaluated two ways:

  to_c(...)      C++ for the generated launcher (src/runtime/triton_*.cpp builds it into the
                 module), evaluated on every ak_launch with no Python anywhere;
  evaluate(...)  Python, for the compile-time probes and the Triton interpreter's runs on CPU.

Names: a tensor (input, output or scratch; alone it is the tensor's data pointer), NAME.shape[i]
and NAME.stride[i] (i may be negative: from the last dim), a scalar of the call (a double), a dim
the mapping defines, a constexpr of the launch. Operators: + - * // % (integers are int64 and
never negative here, so // and % are C's / and %), unary -, comparisons, and/or/not, `a if c else
b`, and the functions cdiv(a, b), min(a, b), max(a, b), int64(a) (an i64 kernel argument rather
than i32), float(a). A float anywhere (a scalar, a float constant) makes the expression a float.
"""
import ast

FUNCTIONS = {"cdiv": 2, "min": 2, "max": 2, "int64": 1, "float": 1}
BINARY_C = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/", ast.Mod: "%", ast.Div: "/"}
COMPARE_C = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class ExprError(ValueError):
    """A malformed or unresolvable expression; `text` is the expression, for locating its line."""

    def __init__(self, text, message):
        super().__init__(f"'{text}': {message}")
        self.text = text


class Names:
    """What an expression may name: tensors (name -> C expression of a const ak_tensor*), scalars
    (name -> index in call->scalars), dims (name -> Expr), constexprs (name -> value)."""

    def __init__(self, tensors, scalars, dims=None, constexprs=None):
        self.tensors, self.scalars = tensors, scalars
        self.dims, self.constexprs = dims or {}, constexprs or {}

    def with_constexprs(self, constexprs):
        return Names(self.tensors, self.scalars, self.dims, constexprs)


class Expr:
    """One parsed expression. `kind` is "pointer" (a bare tensor name), "int" or "float";
    `wide` is true for int64(...); `dims_used` lists (tensor, index) pairs for the launcher's
    ndim checks."""

    def __init__(self, text, names):
        self.text = str(text)
        self.names = names
        try:
            self.tree = ast.parse(self.text.strip(), mode="eval").body
        except SyntaxError as e:
            raise ExprError(self.text, f"not an expression ({e.msg})") from None
        self.dims_used = []
        self.kind = self._kind(self.tree)
        self.wide = isinstance(self.tree, ast.Call) and getattr(self.tree.func, "id", "") == "int64"

    # -- checking and typing --------------------------------------------------------------------
    def _fail(self, message):
        raise ExprError(self.text, message)

    def _kind(self, node):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                self._fail(f"constant {node.value!r} is not a number")
            return "float" if isinstance(node.value, float) else "int"
        if isinstance(node, ast.Name):
            return self._name_kind(node.id)
        if isinstance(node, ast.Subscript):
            tensor, _, index = self._tensor_attribute(node)
            self.dims_used.append((tensor, index))
            return "int"
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY_C:
            kinds = {self._kind(node.left), self._kind(node.right)}
            if "pointer" in kinds:
                self._fail("arithmetic on a tensor's pointer")
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and "float" in kinds:
                self._fail("// and % take integers")
            return "float" if "float" in kinds or isinstance(node.op, ast.Div) else "int"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            kind = self._kind(node.operand)
            return "int" if isinstance(node.op, ast.Not) else kind
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                if self._kind(operand) == "pointer":
                    self._fail("comparison of a tensor's pointer")
            if any(type(op) not in COMPARE_C for op in node.ops):
                self._fail("only < <= > >= == != compare")
            return "int"
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                self._kind(value)
            return "int"
        if isinstance(node, ast.IfExp):
            self._kind(node.test)
            kinds = {self._kind(node.body), self._kind(node.orelse)}
            return "float" if "float" in kinds else "int"
        if isinstance(node, ast.Call):
            return self._call_kind(node)
        self._fail(f"'{ast.unparse(node)}' is not allowed in a launch expression")

    def _name_kind(self, name):
        n = self.names
        if name in n.tensors:
            return "pointer"
        if name in n.scalars:
            return "float"
        if name in n.dims:
            return n.dims[name].kind
        if name in n.constexprs:
            value = n.constexprs[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self._fail(f"constexpr {name} = {value!r} is not a number")
            return "float" if isinstance(value, float) else "int"
        known = sorted([*n.tensors, *n.scalars, *n.dims, *n.constexprs])
        self._fail(f"unknown name {name} (known: {', '.join(known) or 'none'})")

    def _tensor_attribute(self, node):
        """NAME.shape[i] or NAME.stride[i] -> (tensor, "shape"|"stride", i)."""
        value = node.value
        if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
                and value.attr in ("shape", "stride")):
            self._fail("only TENSOR.shape[i] and TENSOR.stride[i] may be indexed")
        tensor = value.value.id
        if tensor not in self.names.tensors:
            self._fail(f"{tensor} is not a tensor of the call")
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and isinstance(index.operand, ast.Constant):
            index = -index.operand.value
        elif isinstance(index, ast.Constant):
            index = index.value
        if not isinstance(index, int) or isinstance(index, bool) or not -4 <= index < 4:
            self._fail("a shape or stride index is a constant in -4..3")
        return tensor, value.attr, index

    def _call_kind(self, node):
        name = getattr(node.func, "id", None)
        if name not in FUNCTIONS or node.keywords or len(node.args) != FUNCTIONS[name]:
            self._fail(f"functions are {', '.join(f'{f}({FUNCTIONS[f]} args)' for f in FUNCTIONS)}")
        kinds = [self._kind(arg) for arg in node.args]
        if "pointer" in kinds:
            self._fail(f"{name}() of a tensor's pointer")
        if name in ("cdiv", "int64") and "float" in kinds:
            self._fail(f"{name}() takes integers")
        if name == "int64" and node is not self.tree:
            self._fail("int64(...) wraps a whole argument")
        if name == "float":
            return "float"
        return "float" if "float" in kinds else "int"

    # -- Python ---------------------------------------------------------------------------------
    def evaluate(self, env):
        """Value in Python. env: tensors (name -> object with .shape and .stride() sequences, or
        the value to pass for a bare name), scalars (name -> float)."""
        return _Evaluator(self, env).run(self.tree)

    # -- C++ ------------------------------------------------------------------------------------
    def to_c(self):
        """A C++ expression over the launcher's Frame `f` (the call, its tensors, the dims and a
        flag a division by zero sets); ints are int64_t, floats double."""
        return _CWriter(self).write(self.tree)


class _Evaluator:
    def __init__(self, expr, env):
        self.expr, self.env = expr, env

    def run(self, node):
        names = self.expr.names
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in names.tensors:
                return self.env["tensors"][node.id]
            if node.id in names.scalars:
                return float(self.env["scalars"][node.id])
            if node.id in names.dims:
                return names.dims[node.id].evaluate(self.env)
            return names.constexprs[node.id]
        if isinstance(node, ast.Subscript):
            tensor, attribute, index = self.expr._tensor_attribute(node)
            t = self.env["tensors"][tensor]
            values = list(t.shape) if attribute == "shape" else list(t.stride())
            return int(values[index])
        if isinstance(node, ast.BinOp):
            return self._binary(node.op, self.run(node.left), self.run(node.right))
        if isinstance(node, ast.UnaryOp):
            value = self.run(node.operand)
            return int(not value) if isinstance(node.op, ast.Not) else -value
        if isinstance(node, ast.Compare):
            left = self.run(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = self.run(right_node)
                if not _compare(op, left, right):
                    return 0
                left = right
            return 1
        if isinstance(node, ast.BoolOp):
            values = [bool(self.run(v)) for v in node.values]
            return int(all(values) if isinstance(node.op, ast.And) else any(values))
        if isinstance(node, ast.IfExp):
            return self.run(node.body) if self.run(node.test) else self.run(node.orelse)
        return self._call(node.func.id, [self.run(a) for a in node.args])

    def _binary(self, op, a, b):
        if isinstance(op, (ast.FloorDiv, ast.Mod, ast.Div)) and b == 0:
            raise ExprError(self.expr.text, "division by zero")
        if isinstance(op, ast.FloorDiv):
            return int(a) // int(b)
        if isinstance(op, ast.Mod):
            return int(a) % int(b)
        if isinstance(op, ast.Div):
            return a / b
        return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}[type(op)]

    def _call(self, name, args):
        if name == "cdiv":
            if args[1] == 0:
                raise ExprError(self.expr.text, "division by zero")
            return -(-int(args[0]) // int(args[1]))
        if name == "min":
            return min(args)
        if name == "max":
            return max(args)
        return float(args[0]) if name == "float" else int(args[0])


def _compare(op, a, b):
    return {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b, ast.Eq: a == b,
            ast.NotEq: a != b}[type(op)]


class _CWriter:
    def __init__(self, expr):
        self.expr = expr

    def write(self, node):
        names = self.expr.names
        if isinstance(node, ast.Constant):
            return repr(float(node.value)) if isinstance(node.value, float) else f"int64_t{{{node.value}}}"
        if isinstance(node, ast.Name):
            if node.id in names.tensors:
                return f"{names.tensors[node.id]}->data"
            if node.id in names.scalars:
                return f"f.call->scalars[{names.scalars[node.id]}]"
            if node.id in names.dims:
                return f"f.dim_{node.id}"
            value = names.constexprs[node.id]
            return repr(float(value)) if isinstance(value, float) else f"int64_t{{{value}}}"
        if isinstance(node, ast.Subscript):
            tensor, attribute, index = self.expr._tensor_attribute(node)
            field = "shape" if attribute == "shape" else "strides"
            t = names.tensors[tensor]
            position = str(index) if index >= 0 else f"{t}->ndim - {-index}"
            return f"{t}->{field}[{position}]"
        if isinstance(node, ast.BinOp):
            left, right = self.write(node.left), self.write(node.right)
            if isinstance(node.op, ast.FloorDiv):
                return f"ak_div(f, {left}, {right})"
            if isinstance(node.op, ast.Mod):
                return f"ak_mod(f, {left}, {right})"
            if isinstance(node.op, ast.Div):
                return f"ak_fdiv(f, double({left}), double({right}))"
            return f"({left} {BINARY_C[type(node.op)]} {right})"
        if isinstance(node, ast.UnaryOp):
            operand = self.write(node.operand)
            return f"int64_t(!{operand})" if isinstance(node.op, ast.Not) else f"(-{operand})"
        if isinstance(node, ast.Compare):
            parts, left = [], self.write(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = self.write(right_node)
                parts.append(f"({left} {COMPARE_C[type(op)]} {right})")
                left = right
            return f"int64_t({' && '.join(parts)})"
        if isinstance(node, ast.BoolOp):
            joiner = " && " if isinstance(node.op, ast.And) else " || "
            return "int64_t(" + joiner.join(f"bool({self.write(v)})" for v in node.values) + ")"
        if isinstance(node, ast.IfExp):
            return f"({self.write(node.test)} ? {self.write(node.body)} : {self.write(node.orelse)})"
        args = [self.write(a) for a in node.args]
        name = node.func.id
        if name == "cdiv":
            return f"ak_cdiv(f, {args[0]}, {args[1]})"
        if name in ("min", "max"):
            return f"std::{name}<{'double' if self.expr._kind(node) == 'float' else 'int64_t'}>({args[0]}, {args[1]})"
        return f"double({args[0]})" if name == "float" else f"int64_t({args[0]})"
