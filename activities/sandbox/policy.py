"""What generated code may use: one list, read by the static check and the runtime layer.

`MODULE_EXPORTS` names, per importable module, the only attributes generated code gets: the
import hook hands out read-only namespaces built from it (never the module itself), and the
static check rejects `np.foo` / `from numpy import foo` for any `foo` outside it. A dotted entry
(`numpy.linalg`) is also an attribute of its parent's namespace (`np.linalg`).
"""

from __future__ import annotations

from activities.behaviours.primitives import __all__ as PRIMITIVES


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


NUMPY_EXPORTS = _names(
    """
    array asarray asanyarray ascontiguousarray copy zeros ones full empty zeros_like ones_like
    full_like empty_like arange linspace logspace geomspace eye identity diag diagonal meshgrid
    tril triu

    abs absolute fabs sqrt cbrt square exp exp2 expm1 log log2 log10 log1p logaddexp logaddexp2
    sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh hypot sinc
    deg2rad rad2deg degrees radians unwrap angle real imag conj conjugate
    acos acosh asin asinh atan atan2 atanh pow concat permute_dims matrix_transpose vecdot
    cumulative_sum cumulative_prod unique_values unique_counts astype isneginf isposinf

    add subtract multiply divide true_divide floor_divide power float_power negative positive
    reciprocal mod fmod remainder divmod sign signbit copysign heaviside floor ceil round around
    rint trunc fix clip nan_to_num

    maximum minimum fmax fmin max min amax amin ptp argmax argmin nanmax nanmin nanargmax
    nanargmin sum prod cumsum cumprod nansum nanprod nancumsum mean average median std var
    nanmean nanmedian nanstd nanvar percentile quantile nanpercentile nanquantile cov corrcoef

    dot vdot inner outer cross matmul tensordot einsum kron trace transpose reshape ravel squeeze
    expand_dims swapaxes moveaxis flip fliplr flipud roll rot90 tile repeat concatenate stack
    vstack hstack dstack column_stack split array_split append insert delete pad broadcast_to
    atleast_1d atleast_2d atleast_3d apply_along_axis vectorize

    where select piecewise any all isfinite isnan isinf isclose allclose array_equal
    logical_and logical_or logical_not logical_xor greater greater_equal less less_equal equal
    not_equal count_nonzero nonzero flatnonzero argwhere unique sort argsort lexsort partition
    argpartition searchsorted digitize bincount histogram histogram2d isin intersect1d union1d
    setdiff1d take take_along_axis diff ediff1d gradient convolve correlate interp polyfit
    polyval trapezoid trapz

    ndim shape size isscalar iscomplexobj isrealobj issubdtype result_type errstate seterr
    geterr finfo iinfo
    array2string array_str array_repr format_float_positional format_float_scientific

    pi e inf nan newaxis euler_gamma

    float16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 intp bool bool_
    complex64 complex128 integer floating number generic signedinteger unsignedinteger
    complexfloating inexact dtype ndarray
    """
)

MODULE_EXPORTS: dict[str, frozenset[str]] = {
    "__future__": _names(
        "annotations division absolute_import print_function generator_stop nested_scopes "
        "generators with_statement unicode_literals"
    ),
    "math": _names(
        """
        acos acosh asin asinh atan atan2 atanh cbrt ceil comb copysign cos cosh degrees dist e
        erf erfc exp exp2 expm1 fabs factorial floor fmod frexp fsum gamma gcd hypot inf isclose
        isfinite isinf isnan isqrt lcm ldexp lgamma log log10 log1p log2 modf nan nextafter perm
        pi pow prod radians remainder sin sinh sqrt sumprod tan tanh tau trunc ulp
        """
    ),
    "cmath": _names(
        """
        acos acosh asin asinh atan atanh cos cosh e exp inf infj isclose isfinite isinf isnan
        log log10 nan nanj phase pi polar rect sin sinh sqrt tan tanh tau
        """
    ),
    "numpy": NUMPY_EXPORTS,
    "numpy.linalg": _names(
        """
        norm vector_norm matrix_norm det slogdet inv pinv solve lstsq eig eigh eigvals eigvalsh
        svd qr cholesky matrix_rank matrix_power cond multi_dot cross outer trace LinAlgError
        """
    ),
    "numpy.random": _names(
        """
        default_rng seed random rand randn randint random_sample normal uniform choice shuffle
        permutation standard_normal exponential poisson binomial beta gamma lognormal
        """
    ),
    "collections": _names("deque defaultdict OrderedDict Counter namedtuple"),
    "itertools": _names(
        """
        accumulate batched chain combinations combinations_with_replacement compress count cycle
        dropwhile filterfalse groupby islice pairwise permutations product repeat starmap
        takewhile tee zip_longest
        """
    ),
    "functools": _names("partial reduce lru_cache cache cmp_to_key"),
    "statistics": _names(
        """
        mean fmean geometric_mean harmonic_mean median median_low median_high median_grouped mode
        multimode quantiles pstdev pvariance stdev variance correlation covariance
        linear_regression NormalDist StatisticsError
        """
    ),
    # Module-level functions only: `random.Random` and its instances are not handed out.
    "random": _names(
        """
        random uniform gauss normalvariate lognormvariate expovariate vonmisesvariate
        gammavariate betavariate paretovariate weibullvariate triangular binomialvariate
        randint randrange choice choices shuffle sample seed getrandbits
        """
    ),
    # The behaviour library (activities/behaviours/primitives.py), by its short name.
    "primitives": frozenset(PRIMITIVES),
}
# Where a module name generated code imports is not the real module's name.
MODULE_SOURCES: dict[str, str] = {"primitives": "activities.behaviours.primitives"}
# Not `typing`: get_type_hints(obj, globalns={}) evaluates annotation strings with the real
# builtins. Not `operator`: attrgetter/methodcaller read attributes by string.

# Modules generated code may import (exact names; submodules are listed themselves).
ALLOWED_MODULES = frozenset(MODULE_EXPORTS)

# Classes handed out for isinstance() only: calling them is refused, and type(x) of one of
# their instances gives the stand-in (np.ndarray(shape, dtype=object, buffer=b"...") would
# build Python objects from raw bytes).
TYPE_ONLY_EXPORTS = frozenset({("numpy", "ndarray")})

# Builtins generated code may call or name.
ALLOWED_BUILTINS = frozenset(
    {
        "abs", "all", "any", "bool", "callable", "chr", "complex", "dict", "divmod",
        "enumerate", "filter", "float", "format", "frozenset", "hash", "int", "isinstance",
        "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "ord",
        "pow", "print", "property", "range", "repr", "reversed", "round", "set", "slice",
        "sorted", "staticmethod", "classmethod", "str", "sum", "super", "tuple", "type", "zip",
        "True", "False", "None", "NotImplemented", "Ellipsis",
        "ArithmeticError", "AssertionError", "AttributeError", "Exception", "IndexError",
        "KeyError", "LookupError", "NotImplementedError", "OverflowError", "RuntimeError",
        "StopIteration", "TypeError", "ValueError", "ZeroDivisionError", "FloatingPointError",
    }
)  # fmt: skip

# Names that reach outside the sandbox or around the static check; they may not be used or
# defined (as a variable, parameter, function or class).
FORBIDDEN_NAMES = frozenset(
    {
        "exec", "eval", "compile", "open", "__import__", "globals", "locals", "vars", "dir",
        "getattr", "setattr", "delattr", "hasattr", "input", "breakpoint", "help", "exit",
        "quit", "memoryview", "bytearray", "__builtins__", "__loader__", "__spec__",
    }
)  # fmt: skip

# Attributes that expose frames, code, globals or the type hierarchy, that read or write files
# through numpy, or that give raw memory; rejected whatever object they are read from (self
# included).
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        # introspection and frames
        "mro", "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await",
        "ag_frame", "ag_code", "f_globals", "f_locals", "f_back", "f_builtins", "f_code",
        "tb_frame", "tb_next", "co_code", "func_globals", "func_code", "im_func", "im_self",
        # numpy: files, pickles, native code
        "load", "loads", "save", "savez", "savez_compressed", "savetxt", "loadtxt",
        "genfromtxt", "fromfile", "tofile", "fromregex", "memmap", "dump", "dumps",
        "DataSource", "ctypeslib", "ctypes", "cffi", "lib", "core", "f2py", "distutils",
        "testing", "show_config", "show_runtime", "get_include", "os", "sys", "open",
        # numpy: raw memory (buffers, views of another array's memory, reallocation in place)
        "data", "base", "frombuffer", "fromstring", "from_dlpack", "stride_tricks",
        "as_strided", "resize", "capsule",
    }
)  # fmt: skip

# Dunder attributes that may be read (super().__init__()).
ALLOWED_DUNDER_ATTRIBUTES = frozenset({"__init__"})

# Dunder methods a class may define (in its body or in a dict given to type()). Not the ones
# the interpreter or numpy call behind the code's back with more power than the code has:
# __getattr__/__getattribute__/__setattr__, __del__, __reduce__ (pickling), __init_subclass__,
# __set_name__, __class_getitem__, __get__/__set__ (descriptors), __array_interface__ and the
# other numpy protocols (__array_interface__ builds an array over any address).
ALLOWED_DUNDER_METHODS = frozenset(
    {
        "__init__", "__call__", "__repr__", "__str__", "__len__", "__iter__", "__next__",
        "__getitem__", "__setitem__", "__contains__", "__bool__", "__hash__",
        "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
        "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__",
        "__mul__", "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__",
        "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
        "__matmul__", "__rmatmul__", "__neg__", "__pos__", "__abs__",
        "__float__", "__int__", "__round__", "__enter__", "__exit__",
    }
)  # fmt: skip

# Dunder keys the interpreter itself puts in a class's namespace.
IMPLICIT_CLASS_KEYS = frozenset(
    {
        "__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__annotations__",
        "__abstractmethods__", "__orig_bases__", "__static_attributes__", "__firstlineno__",
        "__classcell__", "__classdictcell__", "__type_params__",
    }
)  # fmt: skip

# The only dunder string literal generated code may contain (if __name__ == "__main__":).
ALLOWED_DUNDER_STRINGS = frozenset({"__main__"})
