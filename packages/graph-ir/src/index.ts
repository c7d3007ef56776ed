/**
 * The poot graph IR: dtypes and packed formats, the primitive op vocabulary (typing rule + reference
 * semantics per op), Graph/Eqn/Value with storage classes, Builder, printer, JSON, analysis and eval.
 * @packageDocumentation
 */

export { GraphError, InvariantError, invariant } from "./errors.js";
export type { GraphErrorCode, GraphErrorContext } from "./errors.js";

export {
  SCALAR_DTYPES,
  dtypeEquals,
  dtypeName,
  isFloat,
  isInt,
  isPacked,
  isScalarDType,
  scalarByteSize,
  storageBytes,
} from "./dtype.js";
export type { DType, PackedDType, ScalarDType } from "./dtype.js";

export {
  bf16BitsToF32,
  bitsToF32,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToBits,
  f32ToF16Bits,
  roundToBf16,
  roundToF16,
} from "./convert.js";

export { decodeBlock, decodePacked, validatePackedFormat } from "./packed.js";
export type { DecodeBinaryOp, DecodeExpr, DecodeLoadType, PackedFormat } from "./packed.js";

export { broadcastShapes, numel, shapeEquals, shapeString, stridesOf } from "./shape.js";
export type { Shape } from "./shape.js";

export { isLiteral } from "./graph.js";
export type {
  Eqn,
  Graph,
  GraphOutput,
  Literal,
  Operand,
  ParamValue,
  Params,
  SlotKind,
  StatePair,
  Storage,
  StorageKind,
  StoredData,
  Value,
  ValueId,
  ValueType,
} from "./graph.js";

export { allocData, roundInPlace, tensorFromHost } from "./tensor.js";
export type { HostData, Tensor, TensorData } from "./tensor.js";

export { opContext, typeString } from "./ops/opdef.js";
export type { OpCategory, OpContext, OpDef, OpTable } from "./ops/opdef.js";
export { PRIMITIVE_OPS, extendOps } from "./ops/table.js";
export type { PrimitiveOp } from "./ops/table.js";
export type { CastParams } from "./ops/elementwise.js";
export type { ReduceKind, ReduceParams } from "./ops/reduce.js";
export type {
  BroadcastParams,
  ConcatParams,
  DynamicSliceParams,
  GatherParams,
  ReshapeParams,
  SliceParams,
  TransposeParams,
} from "./ops/movement.js";
export type { IotaParams } from "./ops/linalg.js";
export { erf } from "./ops/erf.js";

export { operandType, storedClass, validateGraph } from "./validate.js";
export type { OpsOption } from "./validate.js";

export { GraphBuilder } from "./builder-core.js";
export type { BuilderOptions, In, Ref } from "./builder-core.js";
export { Builder } from "./builder.js";
export type { AttentionMask, AttentionOptions } from "./builder.js";

export { printGraph } from "./printer.js";
export { GRAPH_JSON_VERSION, graphFromJson, graphToJson, graphToJsonString } from "./json.js";
export { dispatchCount, peakTransientBytes } from "./analysis.js";
export { evaluate } from "./eval.js";
export type { ConstSource, EvalBindings, EvalOptions, EvalResult } from "./eval.js";
