/**
 * The poot kernel IR, its validator, printer and .kir.json form, the TypeScript DSL, pootc and the interpreter.
 * @packageDocumentation
 */
export type {
  ScalarType,
  VecElem,
  VecType,
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
  Stmt,
  StmtKind,
  ExprKind,
} from "./ir.js";
export { isVecType, elemOf, lanesOf, widenedType, elemBytes } from "./ir.js";
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
