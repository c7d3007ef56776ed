// The kernel IR: plain, typed, structured data that every codegen target lowers and the interpreter runs.
// No classes, functions or dependencies, so a Kernel is JSON-serializable as is (except non-finite f32 constants);
// helpers over its types are in ir-types.ts.

// ── types ──

/** Scalar types a value (register) can have. bf16/f16/u8/i8 exist only in storage. */
export type ScalarType = "bool" | "i32" | "u32" | "f32";

/** Element types of vectors. */
export type VecElem = "f32" | "i32" | "u32";

/**
 * Vector types (for wide loads and packed math). vec8 and vec16 are the wide SIMD registers of CPUs (AVX2, AVX-512):
 * only targets whose caps report `vectorLanes` of at least their width lower them (decision 2310); the others refuse
 * the kernel with codegen's `missing-capability`.
 */
export type VecType = `vec2<${VecElem}>` | `vec4<${VecElem}>` | `vec8<${VecElem}>` | `vec16<${VecElem}>`;

/** Lane counts a vector type can have. */
export type VecLanes = 2 | 4 | 8 | 16;

/** The types a SIMD load (`load4`) produces: 4, 8 or 16 widened lanes. */
export type LoadVecType = `vec${4 | 8 | 16}<${VecElem}>`;

/** Any type a value can have in the IR (a let, a var, an expression). */
export type ValueType = ScalarType | VecType;

/**
 * Storage-only scalar types: readable from / writable to memory, never a value type.
 * A load widens them (bf16/f16 -> f32 exactly, u8 -> u32, i8 -> i32); a store narrows
 * (f32 -> bf16/f16 with round-to-nearest-even, u32 -> u8 / i32 -> i8 keeping the low 8 bits).
 */
export type StorageOnlyType = "bf16" | "f16" | "u8" | "i8";

/** Element type of a buffer or a workgroup/private array: a flat array of this. Never bool. */
export type ElemType = Exclude<ValueType, "bool"> | StorageOnlyType;

/** Address spaces. `global` = buffer parameters, `workgroup` = shared arrays, `private` = per-thread arrays. */
export type AddressSpace = "global" | "workgroup" | "private";

/** Access mode of a buffer parameter. */
export type Access = "read" | "write" | "read_write";

/**
 * A size known when the kernel is specialized: a literal, or a specialization constant (a u32 the caller
 * supplies from the device caps, e.g. the workgroup width). `specialize()` replaces every spec by a literal.
 */
export type Size = number | { readonly spec: string };

// ── declarations ──

/** A specialization constant (u32): a launch/caps-time value, usable in sizes and expressions. */
export interface SpecDecl {
  readonly name: string;
  /** Value used when the caller supplies none; absent = must be supplied. */
  readonly default?: number;
}

/** A storage buffer parameter: a flat array of `elem` in the global address space. */
export interface BufferParam {
  readonly name: string;
  /** Binding index (unique within the kernel; dense 0..n-1 is conventional). */
  readonly binding: number;
  readonly elem: ElemType;
  readonly access: Access;
  /**
   * True if the buffer is only ever accessed through `atomic` statements (WGSL `array<atomic<u32>>`).
   * Then elem is u32 or i32 (or f32 for atomic add, which some targets emulate).
   */
  readonly atomic?: boolean;
}

/** A scalar uniform parameter (launch metadata such as sizes), read-only and uniform across threads. */
export interface UniformParam {
  readonly name: string;
  readonly type: "u32" | "i32" | "f32";
}

/** A workgroup-shared array (one instance per workgroup, uninitialized at launch). */
export interface SharedArray {
  readonly name: string;
  readonly elem: Exclude<ValueType, "bool">;
  readonly length: Size;
  /** True if only accessed through `atomic` statements. */
  readonly atomic?: boolean;
}

/** A compute kernel. */
export interface Kernel {
  readonly name: string;
  /** Workgroup size [x, y, z]; each may be a specialization constant. */
  readonly workgroupSize: readonly [Size, Size, Size];
  readonly specs: readonly SpecDecl[];
  readonly buffers: readonly BufferParam[];
  readonly uniforms: readonly UniformParam[];
  readonly shared: readonly SharedArray[];
  readonly body: readonly Stmt[];
}

// ── expressions (pure; `load` reads memory but has no side effect) ──

/** Per-thread builtin values, all u32. Axis-indexed ones carry `axis`. */
export type AxisBuiltin = "global_id" | "local_id" | "workgroup_id" | "num_workgroups" | "workgroup_size";
/**
 * Scalar builtins. `local_index` = linearized local id (x fastest). Subgroups partition `local_index` in
 * order: `subgroup_id = local_index / subgroup_size`, `subgroup_lane = local_index % subgroup_size`;
 * `subgroup_size` is a launch/caps value (a power of two), not known to the kernel author.
 */
export type ScalarBuiltin = "local_index" | "subgroup_id" | "subgroup_lane" | "subgroup_size";

/** Unary operators. `neg` on numbers, `not` = bitwise not on i32/u32 (logical on bool). */
export type UnaryOp = "neg" | "not";

/**
 * Binary arithmetic/bit/logic operators; both operands have the result type (shift amounts too).
 * f32: add sub mul div rem(truncating, like C fmod). i32/u32: add sub mul (wrapping) div rem (truncating;
 * division by zero is undefined on targets and an error in the interpreter) and or xor shl shr
 * (shift count taken mod 32; shr arithmetic for i32, logical for u32). bool: and or xor (logical).
 * Vectors: component-wise arithmetic with the same rules.
 */
export type BinaryOp = "add" | "sub" | "mul" | "div" | "rem" | "and" | "or" | "xor" | "shl" | "shr";

/** Comparison operators on scalars of one numeric type (eq/ne also on bool); result bool. */
export type CmpOp = "eq" | "ne" | "lt" | "le" | "gt" | "ge";

/**
 * Math intrinsics on f32 (component-wise on vec<f32>); abs/min/max also on i32/u32.
 * fma(a,b,c) = a*b+c rounded once. Arity: fma 3, min/max 2, dot4U8I8 3, the rest 1.
 * dot4U8I8(acc, a, b) (decision 2320): `acc` i32 (or vec4<i32>), `a` and `b` u32 (or vec4<u32>), each u32 four
 * packed bytes (byte 0 in the low bits); per lane `acc + Σ_k u8(a, k) · i8(b, k)` (a's bytes unsigned, b's signed,
 * the sum wrapping in i32): the integer dot product of x86 `vpdpbusd` and PTX `dp4a.u32.s32`. Only targets with an
 * integer dot product lower it (x86 with VNNI); the others refuse the kernel with codegen's `missing-capability`.
 */
export type MathFn =
  | "exp"
  | "log"
  | "sqrt"
  | "rsqrt"
  | "tanh"
  | "erf"
  | "sin"
  | "cos"
  | "abs"
  | "min"
  | "max"
  | "fma"
  | "floor"
  | "dot4U8I8";

/**
 * Pack/unpack between f32 and 16-bit float bit patterns held in a u32.
 * pack bf16x2/f16x2: vec2<f32> -> u32 (x in the low half), round-to-nearest-even (NaN stays NaN).
 * unpack bf16x2/f16x2: u32 -> vec2<f32>. pack bf16/f16: f32 -> u32 (bits in the low 16, high 16 zero).
 * unpack bf16/f16: u32 (low 16 bits) -> f32.
 */
export type PackFormat = "bf16x2" | "f16x2" | "bf16" | "f16";

/** An expression node; every node carries its result `type`. */
export type Expr =
  /** A literal: bool -> boolean; i32/u32 -> integer in range; f32 -> a number exactly representable in f32. */
  | { readonly k: "const"; readonly type: ScalarType; readonly value: number | boolean }
  /** A let/var/loop variable in scope. */
  | { readonly k: "local"; readonly type: ValueType; readonly name: string }
  /** A uniform parameter. */
  | { readonly k: "param"; readonly type: "u32" | "i32" | "f32"; readonly name: string }
  /** A specialization constant. */
  | { readonly k: "spec"; readonly type: "u32"; readonly name: string }
  | { readonly k: "builtin"; readonly type: "u32"; readonly name: AxisBuiltin; readonly axis: 0 | 1 | 2 }
  | { readonly k: "builtin"; readonly type: "u32"; readonly name: ScalarBuiltin }
  /**
   * Read element `index` (u32, in elements) of a buffer (global), shared array (workgroup) or private
   * array. `type` is the element type widened to a value type (bf16 -> f32, u8 -> u32, i8 -> i32).
   */
  | {
      readonly k: "load";
      readonly type: ValueType;
      readonly space: AddressSpace;
      readonly array: string;
      readonly index: Expr;
    }
  | { readonly k: "unary"; readonly type: ValueType; readonly op: UnaryOp; readonly a: Expr }
  | { readonly k: "binary"; readonly type: ValueType; readonly op: BinaryOp; readonly a: Expr; readonly b: Expr }
  | { readonly k: "cmp"; readonly type: "bool"; readonly op: CmpOp; readonly a: Expr; readonly b: Expr }
  /** `cond ? a : b`, both evaluated (no short circuit), cond a bool scalar. */
  | { readonly k: "select"; readonly type: ValueType; readonly cond: Expr; readonly a: Expr; readonly b: Expr }
  | { readonly k: "call"; readonly type: ValueType; readonly fn: MathFn; readonly args: readonly Expr[] }
  /**
   * Value conversion between scalar types (or vectors of equal length): f32 -> i32/u32 truncates toward zero
   * and saturates (NaN -> 0); i32/u32 -> f32 rounds to nearest even; i32 <-> u32 reinterprets the bits
   * (two's complement); bool -> number gives 0/1; number -> bool is `!= 0`.
   */
  | { readonly k: "cast"; readonly type: ValueType; readonly a: Expr }
  /** Reinterpret the 32-bit pattern: among f32/i32/u32 (and equal-length vectors of them). */
  | { readonly k: "bitcast"; readonly type: ValueType; readonly a: Expr }
  | { readonly k: "pack"; readonly type: "u32"; readonly fmt: PackFormat; readonly a: Expr }
  | { readonly k: "unpack"; readonly type: "f32" | "vec2<f32>"; readonly fmt: PackFormat; readonly a: Expr }
  /** Build a vector from scalars of its element type (2 or 4 of them). */
  | { readonly k: "vec"; readonly type: VecType; readonly elems: readonly Expr[] }
  /** Component `lane` (a literal 0 … lanes - 1) of a vector. */
  | { readonly k: "extract"; readonly type: VecElem; readonly a: Expr; readonly lane: number }
  /**
   * Elements `index` … `index + 3` (u32, in elements) of a global buffer of a scalar element type, each widened as
   * `load` widens it, as one `vec4` (a SIMD load; docs/decisions/0302). `type` is `vec4<widened>`, except that 8-bit
   * storage (u8/i8) picks its extension by `type`: `vec4<u32>` zero-extends, `vec4<i32>` sign-extends the bytes.
   * A `vec8`/`vec16` type loads 8 or 16 elements the same way (wide CPU targets only, decision 2310).
   * Every element must be in bounds. Only targets that report SIMD loads lower it (Wasm); the others refuse the
   * kernel with codegen's `missing-capability`.
   * `packed` (8-bit storage, `vec4<u32>` only; decision 2320): sixteen bytes `index` … `index + 15`, four to a lane
   * unextended (lane j holds bytes 4j … 4j + 3, the first in the low bits): the operand of `dot4U8I8`.
   */
  | {
      readonly k: "load4";
      readonly type: LoadVecType;
      readonly array: string;
      readonly index: Expr;
      readonly packed?: true;
    };

// ── statements ──

/** Subgroup operations. Every lane of the subgroup must execute them together (uniform within it). */
export type SubgroupOp =
  /** Sum / max / min of `value` over all lanes; every lane gets the result. */
  | "reduce_add"
  | "reduce_max"
  | "reduce_min"
  /** Every lane gets `value` from lane `lane` (a value uniform over the subgroup). */
  | "broadcast"
  /** Lane i gets `value` from lane `i ^ lane`. */
  | "shuffle_xor"
  /** Lane i gets `value` from lane `lane` (its own, per-lane, source lane index). */
  | "shuffle_idx";

/**
 * Atomic read-modify-write ops on a u32/i32 element (f32 allowed for `add` only). All return the old value.
 * `cmpxchg` writes `value` if the old value equals `compare`. `load` returns the value; `store` writes
 * `value` (no result).
 */
export type AtomicOp = "add" | "max" | "min" | "exchange" | "cmpxchg" | "load" | "store";

/** Input (multiplicand) element type of a matrix multiply-accumulate: 16-bit floats, accumulated in f32. */
export type MmaInput = "bf16" | "f16";

/**
 * Matrix multiply-accumulate shapes (M×N×K) with their fragment layouts (see `MMA_LAYOUTS`): `m16n8k16` is PTX
 * `mma.sync` (32 lanes, sm_80+), `m16n16k16_mfma` AMD CDNA MFMA (64 lanes, gfx90a/gfx942), `m16n8k16_wmma` a 16×8×16
 * product on AMD RDNA3 WMMA (32 lanes, gfx1100).
 */
export type MmaShape = "m16n8k16" | "m16n16k16_mfma" | "m16n8k16_wmma";

/** A statement. Blocks are arrays of statements; names are unique per kernel (no shadowing). */
export type Stmt =
  /** Immutable private value. */
  | { readonly s: "let"; readonly name: string; readonly type: ValueType; readonly value: Expr }
  /** Mutable private variable with an initial value. */
  | { readonly s: "var"; readonly name: string; readonly type: ValueType; readonly init: Expr }
  /** Private array of a value type (not bool), length a Size; contents start as zero. */
  | { readonly s: "array"; readonly name: string; readonly elem: Exclude<ValueType, "bool">; readonly length: Size }
  /** Assign to a `var`. */
  | { readonly s: "assign"; readonly name: string; readonly value: Expr }
  /** Write `value` to element `index` of an array in `space` (narrowed for storage-only types). */
  | {
      readonly s: "store";
      readonly space: AddressSpace;
      readonly array: string;
      readonly index: Expr;
      readonly value: Expr;
    }
  /**
   * `for (var = start; var < end; var += step) body` over i32 or u32; `var` is immutable in the body;
   * start/end/step are evaluated once, before the first iteration; step > 0. The increment never wraps:
   * the loop ends once `var + step >= end` mathematically (codegen must not let the counter overflow).
   */
  | {
      readonly s: "for";
      readonly var: string;
      readonly type: "i32" | "u32";
      readonly start: Expr;
      readonly end: Expr;
      readonly step: Expr;
      readonly body: readonly Stmt[];
    }
  /** `while (cond) body`; leave early with `break`. */
  | { readonly s: "while"; readonly cond: Expr; readonly body: readonly Stmt[] }
  | { readonly s: "if"; readonly cond: Expr; readonly then: readonly Stmt[]; readonly else: readonly Stmt[] }
  /** Leave / next iteration of the innermost for/while. */
  | { readonly s: "break" }
  | { readonly s: "continue" }
  /**
   * Workgroup barrier: every thread of the workgroup waits here (in uniform control flow), and all
   * workgroup and global memory accesses made by the workgroup before it are visible after it.
   */
  | { readonly s: "barrier" }
  /**
   * Defines immutable `name: type` = the subgroup op applied to `value` (type = value's type, a scalar;
   * reduce_* on f32/i32/u32). `lane` (u32) is required for broadcast, shuffle_xor and shuffle_idx.
   */
  | {
      readonly s: "subgroup";
      readonly name: string;
      readonly type: ValueType;
      readonly op: SubgroupOp;
      readonly value: Expr;
      readonly lane?: Expr;
    }
  /**
   * Atomic op on element `index` of an atomic buffer (global) or atomic shared array (workgroup).
   * `name` (optional; absent for `store`) receives the old value as an immutable of type `type`
   * (the element type). `value` absent only for `load`; `compare` present only for `cmpxchg`.
   */
  | {
      readonly s: "atomic";
      readonly op: AtomicOp;
      readonly type: "u32" | "i32" | "f32";
      readonly space: "global" | "workgroup";
      readonly array: string;
      readonly index: Expr;
      readonly value?: Expr;
      readonly compare?: Expr;
      readonly name?: string;
    }
  /**
   * Warp-scope matrix multiply-accumulate D = A·B + C of `shape`: every lane of a subgroup of exactly the shape's
   * lane count (`MMA_LAYOUTS[shape].lanes`) executes it together (uniform control flow, like a subgroup op) with its own fragments, and gets its D
   * fragment as the immutable `name: vec4<f32>`. `a: vec4<u32>` holds 8 A elements (row-major A[16][16]), `b:
   * vec2<u32>` 4 B elements (B[16][8], "col" = K-contiguous per column), both as `input` bit pairs (low half first,
   * the `pack bf16x2/f16x2` form); `c: vec4<f32>` the accumulator. Which elements a lane holds is the PTX layout
   * (see `mmaACoord`, `mmaBCoord`, `mmaCCoord`). The AMD shapes differ (`MMA_LAYOUTS`; `mmaOperandTypes`): for
   * `m16n16k16_mfma` A and B are `vec2<u32>` (4 elements each) and D is 16×16. Products are exact; sums are f32 in an order the hardware leaves
   * unspecified (the interpreter sums C first, then k ascending).
   */
  | {
      readonly s: "mma";
      readonly name: string;
      readonly shape: MmaShape;
      readonly input: MmaInput;
      readonly a: Expr;
      readonly b: Expr;
      readonly c: Expr;
    }
  /** This thread finishes. A thread that returned must not be awaited by a later barrier/subgroup op. */
  | { readonly s: "return" };

/** The kind tag of each statement. */
export type StmtKind = Stmt["s"];
/** The kind tag of each expression. */
export type ExprKind = Expr["k"];
