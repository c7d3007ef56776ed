/**
 * The poot kernel IR, its validator, printer and .kir.json form, the TypeScript DSL, pootc and the interpreter.
 * @packageDocumentation
 */
export type {
  ScalarType,
  VecElem,
  VecType,
  VecLanes,
  LoadVecType,
  ValueType,
  StorageOnlyType,
  ElemType,
  AddressSpace,
  Access,
  Size,
  SpecDecl,
  BufferParam,
  UniformParam,
  SharedArray,
  Kernel,
  AxisBuiltin,
  ScalarBuiltin,
  UnaryOp,
  BinaryOp,
  CmpOp,
  MathFn,
  PackFormat,
  Expr,
  SubgroupOp,
  AtomicOp,
  MmaInput,
  MmaShape,
  Stmt,
  StmtKind,
  ExprKind,
} from "./ir.js";
export { isVecType, elemOf, lanesOf, vecType, widenedType, elemBytes, load4Types } from "./ir-types.js";
export type {
  KernelValidationCode,
  KernelValidationIssue,
  KirJsonCode,
  KernelRuntimeCode,
  PootcCode,
} from "./errors.js";
export {
  KernelValidationError,
  KirJsonError,
  KernelRuntimeError,
  PootcError,
  KernelDslError,
  invariant,
} from "./errors.js";
export { validateKernel, assertValidKernel } from "./validate.js";
export { printKernel, printExpr } from "./print.js";
export { toKirJson, parseKirJson, KIR_FORMAT, KIR_VERSION } from "./json.js";
export { kernel, Builder } from "./dsl.js";
export type { KernelOptions, Axes, Dot4Acc, Dot4Operand } from "./dsl.js";
export { Arr } from "./dsl-arr.js";
export type { ArrOwner, AtomicType, Index, Widened } from "./dsl-arr.js";
export { Val, Var } from "./dsl-val.js";
export type { ElemOfType, IndexType, ValOwner } from "./dsl-val.js";
export { interpret } from "./interp.js";
export type { InterpretLaunch, KernelBuffer } from "./interp.js";
export { arrayClassFor } from "./interp-memory.js";
export {
  f32ToBits,
  bitsToF32,
  f32ToBf16Bits,
  bf16BitsToF32,
  f32ToF16Bits,
  f16BitsToF32,
  f32ToI32,
  f32ToU32,
  erf,
} from "./numeric.js";
export { specialize } from "./specialize.js";
export {
  mmaACoord,
  mmaBCoord,
  mmaCCoord,
  mmaM16n8k16,
  mmaRun,
  mmaOperandTypes,
  MMA_LAYOUTS,
  MMA_M,
  MMA_N,
  MMA_K,
  MMA_LANES,
  type MmaLayout,
} from "./mma.js";
