"""Scalar element types of the DSL.

Owns the closed set of dtypes a kernel can name (``dsl.float32`` ...), their NumPy
storage types (bf16 and the four fp8 formats through ``ml_dtypes``) and their Triton
spellings. Promotion rules live in ``dsl.semantic`` and nowhere else.

The fp8 formats are Triton's: ``float8e4nv`` (e4m3, no infinities: torch's
``float8_e4m3fn``), ``float8e5`` (e5m2, IEEE-like: ``float8_e5m2``) and the
"fnuz" pair with a single NaN and no negative zero, ``float8e4b8``
(``float8_e4m3fnuz``) and ``float8e5b16`` (``float8_e5m2fnuz``). Triton's own
``float8e4b15`` has no NumPy or torch counterpart and is refused where a kernel
names it (``dsl.triton_compat``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np


def _named(name: str) -> Callable[[DType], bool]:
    """A Triton dtype predicate: true for the dtype called ``name`` alone."""
    def predicate(self: DType) -> bool:
        return self.name == name
    predicate.__name__ = f"is_{name}"
    return predicate


class Signedness(enum.Enum):
    """Triton's ``dtype.SIGNEDNESS``: what ``dtype.int_signedness`` is."""

    SIGNED = 0
    UNSIGNED = 1


# Triton's float layouts: (mantissa bits, exponent bias)
_FLOAT_LAYOUT: dict[str, tuple[int, int]] = {
    "float16": (10, 15), "bfloat16": (7, 127), "float32": (23, 127), "float64": (52, 1023),
    "float8e4nv": (3, 7), "float8e5": (2, 15), "float8e4b8": (3, 8), "float8e5b16": (2, 16),
}


@dataclass(frozen=True)
class DType:
    """One element type: its DSL name, kind, bit width and NumPy storage type."""

    name: str
    kind: str  # "bool", "int" or "float"
    bits: int
    triton_name: str
    signed: bool = True  # integers: two's complement, or unsigned

    def __reduce__(self) -> tuple:
        # pickled by name: IR read back from disk (dsl.ir_cache) holds this module's
        # own dtype objects, as a freshly built IR does
        return (by_name, (self.name,))

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "int" and not self.signed

    @property
    def min(self) -> int:
        """Smallest value of an integer type."""
        return -(1 << (self.bits - 1)) if self.signed and self.kind == "int" else 0

    @property
    def max(self) -> int:
        """Largest value of an integer type (1 for int1)."""
        if self.kind == "bool":
            return 1
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def np(self) -> np.dtype:
        """The NumPy dtype that stores values of this type."""
        return _NUMPY[self.name]

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        """True for integer types, int1 (bool) included."""
        return self.kind in ("int", "bool")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    # Method names mirror Triton's so kernels may say `x.dtype.is_floating()`.
    def is_floating(self) -> bool:
        return self.is_float

    def is_int_signed(self) -> bool:
        return self.kind == "int" and self.signed

    def is_int_unsigned(self) -> bool:
        return self.is_unsigned

    def is_fp8(self) -> bool:
        return self.kind == "float" and self.bits == 8

    def is_standard_floating(self) -> bool:
        return self.is_float and not self.is_fp8()

    def is_int1(self) -> bool:
        return self.is_bool

    # Triton's one-dtype predicates (``x.dtype.is_fp16()``, ``is_uint32()``, ...)
    is_fp16 = _named("float16")
    is_bf16 = _named("bfloat16")
    is_fp32 = _named("float32")
    is_fp64 = _named("float64")
    is_fp8e4nv = _named("float8e4nv")
    is_fp8e5 = _named("float8e5")
    is_fp8e4b8 = _named("float8e4b8")
    is_fp8e5b16 = _named("float8e5b16")
    is_int8 = _named("int8")
    is_int16 = _named("int16")
    is_int32 = _named("int32")
    is_int64 = _named("int64")
    is_uint8 = _named("uint8")
    is_uint16 = _named("uint16")
    is_uint32 = _named("uint32")
    is_uint64 = _named("uint64")

    def is_fp8e4b15(self) -> bool:
        return False  # Triton's own e4m3 with exponent bias 15: not a dtype here

    def is_ptr(self) -> bool:
        return False  # a tensor argument's .dtype is its element type here

    def is_block(self) -> bool:
        return False

    @property
    def primitive_bitwidth(self) -> int:
        return self.bits

    # Triton's integer and float layout attributes (FlagGems' dtype limits read them)
    SIGNEDNESS = Signedness

    def _integer(self, attribute: str) -> None:
        if not self.is_int:
            raise AttributeError(f"{self.name} is not an integer type: it has no {attribute}")

    def _float_layout(self, attribute: str) -> tuple[int, int]:
        layout = _FLOAT_LAYOUT.get(self.name)
        if layout is None:
            raise AttributeError(f"{self.name} is not a float type: it has no {attribute}")
        return layout

    @property
    def int_bitwidth(self) -> int:
        self._integer("int_bitwidth")
        return self.bits

    @property
    def int_signedness(self) -> Signedness:
        self._integer("int_signedness")
        return Signedness.SIGNED if self.kind == "int" and self.signed else Signedness.UNSIGNED

    def get_int_max_value(self) -> int:
        """Triton's name for ``max`` (an integer type's largest value)."""
        if not self.is_int:
            raise TypeError(f"get_int_max_value() of {self.name}, which is not an integer type")
        return self.max

    def get_int_min_value(self) -> int:
        """Triton's name for ``min`` (an integer type's smallest value)."""
        if not self.is_int:
            raise TypeError(f"get_int_min_value() of {self.name}, which is not an integer type")
        return self.min

    @property
    def fp_mantissa_width(self) -> int:
        return self._float_layout("fp_mantissa_width")[0]

    @property
    def exponent_bias(self) -> int:
        return self._float_layout("exponent_bias")[1]

    @property
    def scalar(self) -> DType:
        """Triton's scalar type of a (block) type: a dtype is its own."""
        return self

    def codegen_name(self) -> str:
        return self.name

    def is_const(self) -> bool:
        return False

    @staticmethod
    def is_dtype(type_str: str) -> bool:
        """True when ``type_str`` names a dtype (Triton's ``dtype.is_dtype``)."""
        return type_str in _NUMPY

    @property
    def element_ty(self) -> DType:
        """The element type: Triton kernels read ``x_ptr.dtype.element_ty``, and a
        tensor argument's ``.dtype`` here is already its element type."""
        return self


int1 = DType("int1", "bool", 1, "tl.int1", signed=False)
int8 = DType("int8", "int", 8, "tl.int8")
int16 = DType("int16", "int", 16, "tl.int16")
int32 = DType("int32", "int", 32, "tl.int32")
int64 = DType("int64", "int", 64, "tl.int64")
uint8 = DType("uint8", "int", 8, "tl.uint8", signed=False)
uint16 = DType("uint16", "int", 16, "tl.uint16", signed=False)
uint32 = DType("uint32", "int", 32, "tl.uint32", signed=False)
uint64 = DType("uint64", "int", 64, "tl.uint64", signed=False)
float16 = DType("float16", "float", 16, "tl.float16")
bfloat16 = DType("bfloat16", "float", 16, "tl.bfloat16")
float32 = DType("float32", "float", 32, "tl.float32")
float64 = DType("float64", "float", 64, "tl.float64")
float8e4nv = DType("float8e4nv", "float", 8, "tl.float8e4nv")
float8e5 = DType("float8e5", "float", 8, "tl.float8e5")
float8e4b8 = DType("float8e4b8", "float", 8, "tl.float8e4b8")
float8e5b16 = DType("float8e5b16", "float", 8, "tl.float8e5b16")

# the fp8 formats are storage and conversion types (see the module doc): they are
# not in FLOAT_DTYPES, the float types every float operation takes
FP8_DTYPES: tuple[DType, ...] = (float8e4nv, float8e5, float8e4b8, float8e5b16)
ALL_DTYPES: tuple[DType, ...] = (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                                 float16, bfloat16, float32, float64) + FP8_DTYPES
INT_DTYPES: tuple[DType, ...] = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
FLOAT_DTYPES: tuple[DType, ...] = (float16, bfloat16, float32, float64)

_NUMPY: dict[str, np.dtype] = {
    "int1": np.dtype(np.bool_),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "float8e4nv": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8e5": np.dtype(ml_dtypes.float8_e5m2),
    "float8e4b8": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "float8e5b16": np.dtype(ml_dtypes.float8_e5m2fnuz),
}
_BY_NUMPY: dict[np.dtype, DType] = {_NUMPY[d.name]: d for d in ALL_DTYPES}


def launch_int_dtype(value: int) -> DType | None:
    """A Python int launch argument's type, as Triton's launcher types it: int32 when
    it fits, uint64 in [2**63, 2**64), else int64; None when no 64-bit type holds it."""
    if -(2**31) <= value < 2**31:
        return int32
    if 2**63 <= value < 2**64:
        return uint64
    return int64 if -(2**63) <= value < 2**63 else None


def from_numpy(dtype: np.dtype | type) -> DType:
    """The DSL dtype stored as NumPy ``dtype``; ``TypeError`` if there is none."""
    key = np.dtype(dtype)
    try:
        return _BY_NUMPY[key]
    except KeyError:
        supported = ", ".join(d.name for d in ALL_DTYPES)
        raise TypeError(f"unsupported element type {key}; supported: {supported}") from None


_TORCH_NAMES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
                "float64": "float64", "int8": "int8", "int16": "int16", "int32": "int32",
                "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
                "uint64": "uint64", "bool": "int1", "float8_e4m3fn": "float8e4nv",
                "float8_e5m2": "float8e5", "float8_e4m3fnuz": "float8e4b8",
                "float8_e5m2fnuz": "float8e5b16"}


def from_torch(dtype: object) -> DType:
    """The DSL dtype of a torch dtype (read by name: torch need not be imported);
    ``TypeError`` if there is none."""
    name = str(dtype).removeprefix("torch.")
    if name not in _TORCH_NAMES:
        supported = ", ".join(d.name for d in ALL_DTYPES)
        raise TypeError(f"unsupported element type {dtype}; supported: {supported}")
    return by_name(_TORCH_NAMES[name])


def signed_int(bits: int) -> DType:
    """The signed integer type of ``bits`` bits (8, 16, 32 or 64): the type a float's
    bits are read as."""
    return by_name(f"int{bits}")


def by_name(name: str) -> DType:
    """Look a dtype up by its DSL name (``"float16"``, ``"bf16"`` and ``"fp32"`` also work)."""
    aliases = {"fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float32",
               "float": "float32", "fp64": "float64", "double": "float64", "bool": "int1",
               "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
               "u16": "uint16", "u32": "uint32", "u64": "uint64", "fp8e4nv": "float8e4nv",
               "fp8e5": "float8e5", "fp8e4b8": "float8e4b8", "fp8e5b16": "float8e5b16"}
    canonical = aliases.get(name, name)
    for d in ALL_DTYPES:
        if d.name == canonical:
            return d
    raise KeyError(f"unknown dtype {name!r}")
