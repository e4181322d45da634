"""Reading derivatives.yaml: which operators are differentiable, and how.

``parse_derivatives(path, native_functions)`` returns one ``DerivativeInfo`` per entry,
checked against the operators of native_functions.yaml, or raises one ``GenError`` with
every problem of the file (``FILE:LINE: SCHEMA: what is wrong``): an entry for an unknown
operator or with another schema, a formula for a name that is not an argument, a
differentiable input without a formula and no ``non_differentiable`` mark, a bad
``output_differentiability``, a formula that reads no gradient there is (Note [Gradients of
differentiable outputs]).

``autograd_plan(native_functions, infos)`` then says, for every operator, what its
autograd kernel is (codegen/dest/autograd.py emits it): a derivative (the entry of the
operator, or for an in-place operator the entry of its functional form), a refusal (out=),
a "not implemented" node (tensor outputs, no entry), or nothing (composites, factories,
operators without tensor outputs, entries without a differentiable output).

A formula is rewritten once here (``Formula.cpp``), as text: ``X.sizes()`` becomes the
saved ``X_sizes_`` and ``to_args_sizes(X)`` the saved ``X_args_sizes_``. ``SavedValue`` lists
what the node stores (its kind, the argument or result it comes from, the property taken, the
schema type), when, and for which inputs. This module is model only: how a saved value is
spelled in C++ (its member type and initialiser, how the forward call fills it, the local
apply() unpacks it into) is codegen/api/autograd.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from codegen.cpp_names import is_cpp_keyword
from codegen.errors import GenError, Location
from codegen.model import (
    Argument,
    BaseType,
    FunctionSchema,
    ListType,
    NativeFunction,
    OperatorName,
    OptionalType,
    Type,
)
from codegen.limits import MAX_ENTRY_ERRORS, clip
from codegen.yaml_loader import LocatedDict, LocatedList, load_yaml, yaml_type_name

NON_DIFFERENTIABLE = "non_differentiable"
TWICE_DIFFERENTIABLE = "twice_differentiable"

# Tensor properties a formula may use without the node saving the tensor itself:
# X.<property>() -> the saved X_<property>_.
PROPERTIES = ("sizes", "strides", "scalar_type", "dim", "device")
# to_args_sizes(X) of a Tensor[] argument -> the saved X_args_sizes_ (the sizes of each tensor).
ARGS_SIZES = "args_sizes"
# The non-tensor argument types a node can save (a copy of the value): these base types,
# lists of SAVEABLE_LIST_ELEMENTS, and optionals of either.
SAVEABLE_BASE_TYPES = frozenset({"int", "SymInt", "float", "bool", "Scalar", "str", "ScalarType", "Layout", "Device",
                                 "MemoryFormat"})
SAVEABLE_LIST_ELEMENTS = frozenset({"int", "SymInt", "float"})
_PROPERTY_USE = re.compile(r"(?<![\w.:>])([A-Za-z_]\w*)\.(" + "|".join(PROPERTIES) + r")\(\)")
_ARGS_SIZES_USE = re.compile(r"\bto_args_sizes\(\s*([A-Za-z_]\w*)\s*\)")
_IDENT = re.compile(r"(?<![\w.:>])([A-Za-z_]\w*)\b")
_RESULT_N = re.compile(r"result(\d+)$")
_GRADS_INDEX = re.compile(r"(?<![\w.:>])grads\s*\[\s*(\d+)\s*\]")
_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_STRING_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_CLOSING = {")": "(", "]": "[", "}": "{"}

# The helpers of dk::autograd::formulas (runtime/include/dk/autograd/formulas.h) a formula may
# call unqualified; tests/generator/test_hostile_input.py checks the header declares no other.
FORMULA_HELPERS = frozenset(
    """cat_tensors_backward clamp_backward cumsum_backward embedding_backward evenly_distribute_backward
    gather_backward gelu_second_derivative im2col_backward index_select_backward layer_norm_backward
    log_softmax_backward_data max_min_backward max_pool2d_indices_backward maybe_multiply mean_backward mm_mat1_backward mm_mat2_backward mse_loss_backward
    nll_loss_backward permute_backwards pow_backward select_backward sgn slice_backward
    softmax_backward_data split_backward std_backward sum_backward sum_to threshold_backward
    unbind_backward unsqueeze_to value_selecting_reduction_backward var_backward""".split()
)
# Other names a formula may use: the generator's own (to_args_sizes, grad_input_mask), the
# namespaces and dk types it may qualify with, and C++ keywords (true, static_cast, ...).
FORMULA_NAMES = frozenset(
    """grad grads to_args_sizes grad_input_mask std dk Tensor Scalar ScalarType Layout Device
    MemoryFormat IntArrayRef""".split()
)


def formula_problem(text: str, names: FrozenSet[str]) -> str:
    """Empty when the C++ expression ``text`` is balanced and every name it uses unqualified
    is in ``names`` (arguments, results, helpers) or ``FORMULA_NAMES``; else what is wrong."""
    code = _STRING_LITERAL.sub('""', _strip(text))
    stack: List[Tuple[str, int]] = []
    for column, c in enumerate(code, 1):
        if c in "([{":
            stack.append((c, column))
        elif c in _CLOSING:
            if not stack or stack[-1][0] != _CLOSING[c]:
                return f"unbalanced '{c}' at column {column}"
            stack.pop()
    if stack:
        return f"'{stack[-1][0]}' at column {stack[-1][1]} is never closed"
    for ident in _IDENT.findall(code):
        if ident == "result" or _RESULT_N.match(ident):
            continue  # checked against the returns when the formula is analysed
        if ident not in names and ident not in FORMULA_NAMES and not is_cpp_keyword(ident):
            return (f"unknown name '{clip(ident, 80)}' (not an argument, a result, grad, grads or a known "
                    "helper function)")
    return ""


# ---------------------------------------------------------------- the model


@dataclass(frozen=True)
class SavedValue:
    """One member of a backward node: what the forward call stores for the formulas."""

    member: str          # the name the rewritten formulas use: "self_", "self_sizes_", "alpha_", "result_"
    kind: str            # "tensor", "optional_tensor", "tensor_list", "output", "property", "value"
    source: str          # the argument (or "result", "result1") it comes from
    type: Type           # the schema type of that argument or result
    property: Optional[str]  # kind "property": one of PROPERTIES, or ARGS_SIZES
    users: FrozenSet[str]  # the differentiable inputs whose formulas use it

    @property
    def is_output(self) -> bool:
        return self.kind == "output"

    @property
    def result_index(self) -> int:
        """An output's return index: 0 for ``result``, N for ``resultN``."""
        return 0 if self.source == "result" else int(self.source[len("result"):])


@dataclass(frozen=True)
class Formula:
    """The gradient of one input, or a tuple of several ("a, b")."""

    inputs: Tuple[str, ...]
    text: str            # as written
    cpp: str             # rewritten: properties become saved members
    loc: Location
    uses_grad_input_mask: bool


@dataclass(frozen=True)
class DerivativeInfo:
    """One entry of derivatives.yaml, checked against its operator."""

    nf: NativeFunction
    loc: Location
    node: str                                 # "MulBackward0"
    formulas: Tuple[Formula, ...]
    differentiable_inputs: Tuple[Argument, ...]   # argument order; with a formula
    output_differentiability: Tuple[bool, ...]    # one per return
    saved: Tuple[SavedValue, ...]
    uses_grad: bool                           # a formula reads grad (grads[0])
    uses_grads: bool                          # a formula reads the whole list
    twice_differentiable: bool = True         # the formulas can be differentiated again

    @property
    def name(self) -> OperatorName:
        return self.nf.func.name

    @property
    def has_differentiable_output(self) -> bool:
        return any(self.output_differentiability)

    @property
    def saved_inputs(self) -> Tuple[SavedValue, ...]:
        return tuple(s for s in self.saved if not s.is_output)

    @property
    def saved_outputs(self) -> Tuple[SavedValue, ...]:
        return tuple(s for s in self.saved if s.is_output)

    @property
    def list_inputs(self) -> Tuple[Argument, ...]:
        return tuple(a for a in self.differentiable_inputs if isinstance(a.type, ListType))


# ---------------------------------------------------------------- helpers


def is_tensor_argument(a: Argument) -> bool:
    return a.type.is_tensor_like()


def node_name(name: OperatorName, index: int) -> str:
    """PyTorch's class naming: ``_log_softmax`` -> ``LogSoftmaxBackward0``."""
    base = name.name.rstrip("_") if name.is_inplace else name.name
    return "".join(part.title() for part in base.split("_")) + f"Backward{index}"


def unsaveable_part(t: Type) -> Optional[Type]:
    """None when a node can save a non-tensor argument of type ``t`` (SAVEABLE_BASE_TYPES,
    SAVEABLE_LIST_ELEMENTS); else the part of ``t`` it cannot (``Dimname`` of ``Dimname?``)."""
    if isinstance(t, OptionalType):
        return unsaveable_part(t.elem)
    if isinstance(t, ListType):
        ok = isinstance(t.elem, BaseType) and t.elem.name in SAVEABLE_LIST_ELEMENTS
    else:
        ok = isinstance(t, BaseType) and t.name in SAVEABLE_BASE_TYPES
    return None if ok else t


def _strip(text: str) -> str:
    return _COMMENT.sub(" ", text)


# ---------------------------------------------------------------- parsing

# Note [Gradients of differentiable outputs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The autograd kernel makes its node the history of the differentiable outputs alone
# (output_differentiability, and only tensors), in return order (codegen/dest/autograd.py
# _histories): the node has one gradient per such output, so ``grads[i]`` is the gradient of the
# i-th *differentiable* output and ``grad`` that of the first. Two formulas are then wrong however
# they are written, and are refused here rather than compiled into a node that reads past its
# gradients or never runs:
#   - any formula of an entry with no differentiable output (autograd_plan gives it no kernel);
#   - ``grads[i]`` past the differentiable outputs (when each is one Tensor, so their count is
#     known statically).
# ``result1`` of a non-differentiable output stays allowed: it is a value the forward call
# computed (max.dim's indices), not a gradient.


class _Parser:
    def __init__(self, by_name: Dict[str, NativeFunction]):
        self.by_name = by_name
        # Operators callable unqualified from a formula (dk::cos, ...), and formulas.h's helpers.
        self.helpers = FORMULA_HELPERS | {nf.func.name.name for nf in by_name.values()
                                          if nf.has_function_variant}
        self.errors: List[GenError] = []
        self.entry_start = 0  # index in errors of the current entry's first
        self.skipped = 0      # the current entry's errors beyond MAX_ENTRY_ERRORS, the first at:
        self.skipped_loc: Optional[Location] = None
        self.node_counts: Dict[str, int] = {}

    def error(self, loc: Location, detail: str, schema: Optional[str] = None) -> None:
        """Record an error, at most MAX_ENTRY_ERRORS per entry (``end_entry`` counts the rest)."""
        if len(self.errors) - self.entry_start >= MAX_ENTRY_ERRORS:
            self.skipped += 1
            self.skipped_loc = self.skipped_loc or loc
            return
        self.errors.append(GenError.at(loc, detail, schema))

    def start_entry(self) -> None:
        self.entry_start, self.skipped, self.skipped_loc = len(self.errors), 0, None

    def end_entry(self) -> None:
        """One error counting the entry's errors beyond MAX_ENTRY_ERRORS, if any."""
        if self.skipped:
            self.errors.append(GenError.at(self.skipped_loc, f"{self.skipped} more errors in this entry"))

    def entry(self, raw: LocatedDict) -> Optional[DerivativeInfo]:
        loc = raw.key_loc("name")
        if "name" not in raw:
            self.error(raw.loc, "entry has no 'name:' (the forward schema)")
            return None
        text = raw["name"]
        if not isinstance(text, str):
            self.error(loc, f"'name' must be a schema string, not a {yaml_type_name(text)}")
            return None
        try:
            func = FunctionSchema.parse(text)
        except GenError as e:
            self.error(loc, f"bad schema: {e}")
            return None
        nf = self.by_name.get(str(func.name))
        if nf is None:
            self.error(loc, f"entry for unknown operator '{func.name}' (not in native_functions.yaml)", text)
            return None
        if str(func) != str(nf.func):
            self.error(loc, f"schema differs from native_functions.yaml ({nf.loc}): '{nf.func}'", text)
            return None
        if nf.func.is_out_fn:
            self.error(loc, "out= operators are not differentiable: give the entry of the functional operator", text)
            return None
        if nf.has_composite_implicit_autograd_kernel:
            self.error(loc, "a CompositeImplicitAutograd operator differentiates through its decomposition: "
                            "it takes no derivative entry", text)
            return None
        schema = str(nf.func)
        args = {a.name: a for a in nf.func.arguments}
        formulas: List[Formula] = []
        covered: Dict[str, Location] = {}
        non_diff: List[str] = []
        output_diff: Optional[Tuple[bool, ...]] = None
        twice = True
        for key, value in raw.items():
            kloc = raw.key_loc(key)
            if key == "name" or key == "dispatch":
                continue
            if key == "output_differentiability":
                output_diff = self.output_differentiability(value, kloc, nf, schema)
                continue
            if key == TWICE_DIFFERENTIABLE:
                if not isinstance(value, bool):
                    self.error(kloc, f"{TWICE_DIFFERENTIABLE} must be True or False, not a {yaml_type_name(value)}",
                               schema)
                else:
                    twice = value
                continue
            names = tuple(n.strip() for n in key.split(","))
            bad = False
            for n in names:
                if n not in args:
                    self.error(kloc, f"formula for '{clip(n)}', which is not an argument of {nf.func.name}", schema)
                    bad = True
                elif not is_tensor_argument(args[n]):
                    self.error(kloc, f"formula for '{clip(n)}', which is not a tensor argument ({args[n].type})", schema)
                    bad = True
                elif n in covered:
                    self.error(kloc, f"second formula for '{clip(n)}' (the first is at line {covered[n].line})", schema)
                    bad = True
            if bad:
                continue
            if not isinstance(value, str) or not value.strip():
                self.error(kloc, f"the formula for '{clip(key)}' must be a C++ expression string, not a "
                                 f"{yaml_type_name(value)}", schema)
                continue
            for n in names:
                covered[n] = kloc
            if value.strip() == NON_DIFFERENTIABLE:
                non_diff.extend(names)
                continue
            problem = formula_problem(value, self.formula_names(nf))
            if problem:
                self.error(kloc, f"the formula for '{clip(key)}': {problem}", schema)
                continue
            formulas.append(Formula(names, value.strip(), value.strip(), kloc, "grad_input_mask" in value))
        for a in nf.func.arguments:
            if is_tensor_argument(a) and a.name not in covered:
                self.error(loc, f"missing formula for differentiable input '{a.name}' (give a formula or "
                                f"'{a.name}: {NON_DIFFERENTIABLE}')", schema)
        declared = output_diff is not None
        if output_diff is None:
            output_diff = tuple(True for _ in nf.func.returns)
        self.check_gradients(nf, formulas, output_diff, declared, schema)
        # Numbered per node base name, so copy and copy_ (both "Copy") get distinct classes.
        base = node_name(nf.func.name, 0)
        index = self.node_counts.get(base, 0)
        self.node_counts[base] = index + 1
        diff_names = {n for f in formulas for n in f.inputs}
        diff_inputs = tuple(a for a in nf.func.arguments if a.name in diff_names)
        try:
            formulas, saved, uses_grad, uses_grads = self.analyse(nf, formulas, schema)
        except GenError as e:
            self.errors.append(e)
            return None
        return DerivativeInfo(nf, loc, node_name(nf.func.name, index), tuple(formulas), diff_inputs,
                              output_diff, tuple(saved), uses_grad, uses_grads, twice)

    def formula_names(self, nf: NativeFunction) -> FrozenSet[str]:
        """The names a formula of ``nf`` may use unqualified (besides FORMULA_NAMES)."""
        return frozenset({a.name for a in nf.func.arguments} | self.helpers)

    def check_gradients(self, nf: NativeFunction, formulas: List[Formula], output_diff: Tuple[bool, ...],
                        declared: bool, schema: str) -> None:
        """Every formula reads gradients that exist (Note [Gradients of differentiable outputs])."""
        differentiable = [r for r, d in zip(nf.func.returns, output_diff) if d and r.type.is_tensor_like()]
        why = f" (output_differentiability: [{', '.join(str(d) for d in output_diff)}])" if declared else ""
        if not differentiable:
            for f in formulas:
                inputs = ", ".join(f.inputs)
                self.error(f.loc, f"formula for '{inputs}', but no output of {nf.func.name} is differentiable{why}: "
                                  f"the formula would never run; write '{inputs}: {NON_DIFFERENTIABLE}'", schema)
            return
        if any(r.type != BaseType("Tensor") for r in differentiable):
            return  # a Tensor[] output has a gradient per tensor: how many is known at run time only
        for f in formulas:
            for m in _GRADS_INDEX.finditer(_STRING_LITERAL.sub('""', _strip(f.text))):
                if int(m.group(1)) >= len(differentiable):
                    self.error(f.loc, f"'grads[{m.group(1)}]' in the formula for '{', '.join(f.inputs)}', but "
                                      f"{nf.func.name} has {len(differentiable)} differentiable output(s){why}: grads "
                                      "holds the gradients of the differentiable outputs, in order", schema)
                    break

    def output_differentiability(self, value, loc: Location, nf: NativeFunction, schema: str):
        if not isinstance(value, list) or not all(isinstance(v, bool) for v in value):
            self.error(loc, "output_differentiability must be a list of True/False", schema)
            return None
        if len(value) != len(nf.func.returns):
            self.error(loc, f"output_differentiability has {len(value)} entries but the operator returns "
                            f"{len(nf.func.returns)}", schema)
            return None
        return tuple(value)

    def analyse(self, nf: NativeFunction, formulas: List[Formula], schema: str):
        """Rewrite each formula and work out what the node saves."""
        args = {a.name: a for a in nf.func.arguments}
        saved: Dict[str, SavedValue] = {}
        out: List[Formula] = []
        uses_grad = uses_grads = False
        n_returns = len(nf.func.returns)

        def add(kind: str, source: str, t: Type, user: Tuple[str, ...], what: Optional[str] = None) -> str:
            """Save ``source`` (or its property ``what``); the member's name."""
            member = f"{source}_{what}_" if what else f"{source}_"
            old = saved.get(member)
            users = frozenset(user) | (old.users if old else frozenset())
            saved[member] = SavedValue(member, kind, source, t, what, users)
            return member

        for f in formulas:
            code = _strip(f.text)

            def arg_sizes(m: re.Match) -> str:
                name = m.group(1)
                a = args.get(name)
                if a is None or not isinstance(a.type, ListType):
                    raise GenError.at(f.loc, f"to_args_sizes({name}): '{name}' is not a Tensor[] argument", schema)
                return add("property", name, a.type, f.inputs, ARGS_SIZES)

            code = _ARGS_SIZES_USE.sub(arg_sizes, code)

            def prop(m: re.Match) -> str:
                name, what = m.group(1), m.group(2)
                if name not in args and name != "result":
                    return m.group(0)  # a local of the formula's own (grad.sizes(), ...)
                if name == "result" or not is_tensor_argument(args[name]):
                    return m.group(0)
                if isinstance(args[name].type, OptionalType):
                    return m.group(0)  # Tensor?: save the tensor
                return add("property", name, args[name].type, f.inputs, what)

            code = _PROPERTY_USE.sub(prop, code)
            for ident in _IDENT.findall(code):
                if ident == "grad":
                    uses_grad = True
                elif ident == "grads":
                    uses_grads = True
                elif ident == "result" or _RESULT_N.match(ident):
                    index = 0 if ident == "result" else int(_RESULT_N.match(ident).group(1))
                    if index >= n_returns or (ident == "result" and n_returns != 1):
                        raise GenError.at(f.loc, f"'{ident}' in a formula, but the operator has {n_returns} "
                                                 f"return(s) (use result for one, result0, result1, ... "
                                                 f"for several)", schema)
                    rtype = nf.func.returns[index].type
                    if rtype != BaseType("Tensor"):
                        raise GenError.at(f.loc, f"'{ident}' is a {rtype}: only Tensor results can be saved", schema)
                    add("output", ident, rtype, f.inputs)
                elif ident in args:
                    t = args[ident].type
                    if t == BaseType("Tensor"):
                        add("tensor", ident, t, f.inputs)
                    elif t == OptionalType(BaseType("Tensor")):
                        add("optional_tensor", ident, t, f.inputs)
                    elif isinstance(t, ListType) and t.elem == BaseType("Tensor"):
                        add("tensor_list", ident, t, f.inputs)
                    else:
                        part = unsaveable_part(t)
                        if part is not None:
                            raise GenError.at(f.loc, f"argument '{ident}': cannot save a {part}", schema)
                        add("value", ident, t, f.inputs)
            out.append(Formula(f.inputs, f.text, code, f.loc, f.uses_grad_input_mask))
        ordered = sorted(saved.values(), key=lambda s: (s.is_output, s.member))
        return out, ordered, uses_grad, uses_grads


def parse_derivatives(path: str, native_functions: Sequence[NativeFunction]) -> List[DerivativeInfo]:
    """Every entry of ``path``, checked (raises GenError with all problems)."""
    data = load_yaml(path)
    if data is None:
        return []
    if not isinstance(data, LocatedList):
        raise GenError.at(Location(path, 1), f"the file must be a list of entries, not a {yaml_type_name(data)}")
    by_name = {str(nf.func.name): nf for nf in native_functions}
    parser = _Parser(by_name)
    infos: List[DerivativeInfo] = []
    seen: Dict[str, Location] = {}
    for i, raw in enumerate(data):
        if not isinstance(raw, LocatedDict):
            parser.error(data.item_loc(i), f"an entry must be a mapping, not a {yaml_type_name(raw)}")
            continue
        parser.start_entry()
        info = parser.entry(raw)
        parser.end_entry()
        if info is None:
            continue
        key = str(info.name)
        if key in seen:
            parser.error(info.loc, f"second entry for '{key}' (the first is at line {seen[key].line})")
            continue
        seen[key] = info.loc
        infos.append(info)
    if parser.errors:
        raise GenError.combine(sorted(parser.errors, key=lambda e: (e.loc.line if e.loc else 0)))
    return infos


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class AutogradKernel:
    """What the autograd kernel of one operator does."""

    nf: NativeFunction
    kind: str                         # "derivative", "out", "not_implemented"
    info: Optional[DerivativeInfo]    # kind == "derivative": the entry used

    @property
    def is_inplace(self) -> bool:
        return self.nf.func.kind == "inplace"

    @property
    def is_view(self) -> bool:
        return is_view_operator(self.nf)


def is_view_operator(nf: NativeFunction) -> bool:
    """Returns alias an input without writing it: ``Tensor(a)``, ``Tensor(a)[]``."""
    return any(r.alias is not None and not r.alias.is_write for r in nf.func.returns)


def _has_tensor_output(nf: NativeFunction) -> bool:
    return any(r.type.is_tensor_like() for r in nf.func.returns)


def untracked_views(native_functions: Sequence[NativeFunction], infos: Sequence[DerivativeInfo]) -> FrozenSet[str]:
    """The view operators autograd does not follow (``detach``): their derivatives.yaml entry
    makes every output non-differentiable, so there is no view relation for autograd to keep and
    an in-place change of the result is not recorded against its input."""
    by_name = {str(i.name): i for i in infos}
    untracked = set()
    for nf in native_functions:
        info = by_name.get(str(nf.func.name))
        if is_view_operator(nf) and info is not None and not info.has_differentiable_output:
            untracked.add(str(nf.func.name))
    return frozenset(untracked)


def autograd_plan(native_functions: Sequence[NativeFunction],
                  infos: Sequence[DerivativeInfo]) -> List[AutogradKernel]:
    """The autograd kernel of every operator that gets one, in the order given."""
    by_name = {str(i.name): i for i in infos}
    # An in-place operator takes its functional form's entry: the one of the same name less
    # the underscore, else the one with the same signature (pow_.Scalar: pow.Tensor_Scalar).
    by_signature = {i.nf.func.signature(): i for i in infos if i.nf.func.kind == "functional"}
    plan: List[AutogradKernel] = []
    for nf in native_functions:
        if nf.manual_kernel_registration or nf.has_composite_implicit_autograd_kernel:
            continue
        if nf.namespace != "dk":  # Note [Operator namespaces]: the autograd fallback serves them
            continue
        if not nf.func.dispatch_arguments or not _has_tensor_output(nf):
            continue
        if nf.func.is_out_fn:
            plan.append(AutogradKernel(nf, "out", None))
            continue
        info = by_name.get(str(nf.func.name))
        if info is None and nf.func.is_inplace:
            functional = OperatorName(nf.func.name.name.rstrip("_"), nf.func.name.overload_name)
            candidate = by_name.get(str(functional))
            if candidate is not None and candidate.nf.func.signature() == nf.func.signature():
                info = candidate
            else:
                info = by_signature.get(nf.func.signature())
        if info is not None:
            if info.has_differentiable_output:
                plan.append(AutogradKernel(nf, "derivative", info))
            continue
        plan.append(AutogradKernel(nf, "not_implemented", None))
    return plan
