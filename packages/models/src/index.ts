/**
 * @poot/models: checkpoint readers (safetensors, GGUF), packed-weight formats with reference decoders,
 * model configs, tokenizers and chat templates.
 * @packageDocumentation
 */
export type { Checkpoint, TensorExpectation, TensorInfo } from "./checkpoint.js";
export { numel, requireTensor } from "./checkpoint.js";
export type { ModelErrorCode, ModelErrorContext } from "./errors.js";
export {
  CheckpointFormatError,
  ConfigError,
  MissingTensorError,
  ModelError,
  TokenizerError,
  UnknownArchitectureError,
  UnsupportedTensorTypeError,
  ioError,
} from "./errors.js";
export type { GGUFHeader, GGUFTensorInfo, GGUFValue } from "./gguf.js";
export type { EncodedGGUFHeader, GGUFWriteTensor, GGUFWriteValue } from "./gguf-writer.js";
export { encodeGGUFHeader } from "./gguf-writer.js";
export type { ConvertLlamaOptions, ConvertLlamaResult } from "./gguf-from-hf.js";
export { convertLlamaToGGUF } from "./gguf-from-hf.js";
export { GGUFCheckpoint, GGUF_DEFAULT_ALIGNMENT, GGUF_VALUE_TYPE, openGGUF, parseGGUFHeader } from "./gguf.js";
export { bf16ToF32, f16ToF32, widenBF16, widenF16 } from "./halfs.js";
export type { FieldKind, GGMLTypeName, QuantField, QuantFormat } from "./quant/format.js";
export { decodePacked, packedByteLength } from "./quant/format.js";
export { QK_K } from "./quant/kquants.js";
export { QUANT_FORMATS, formatById, ggmlTypeName } from "./quant/registry.js";
export type { OpenSafetensorsOptions, SafetensorsDType, SafetensorsHeader } from "./safetensors.js";
export {
  SAFETENSORS_DTYPE_BYTES,
  SafetensorsCheckpoint,
  openSafetensors,
  parseSafetensorsHeader,
  safetensorsFromBytes,
} from "./safetensors.js";
export type { ByteSource, FileRange } from "./source.js";
export { FileSource, MemorySource } from "./source.js";
export type {
  Architecture,
  LayerKind,
  LinearAttentionConfig,
  MlaConfig,
  ModelConfig,
  MoeConfig,
  RopeConfig,
  RopeScaling,
  YarnScaling,
} from "./config.js";
export { ARCHITECTURES } from "./config.js";
export { configFromGGUF } from "./config-gguf.js";
export { parseHFConfig, readHFConfig } from "./config-hf.js";
export type { ChatMessage, ChatTemplateOptions, DecodeOptions, EncodeOptions, TokenizerMeta } from "./tokenizer.js";
export { SPECIAL_ALIAS_BASE, StreamDecoder, Tokenizer } from "./tokenizer.js";
export { tokenizerFromGGUF, tokenizerJsonFromGGUF } from "./tokenizer-gguf.js";
export type { BpeTables } from "./bpe-tables.js";
export { llamaQKRowOrder, unpermuteLlamaQK } from "./gguf-permute.js";
export type { DecodeRecipe, FloatOp, IntOp, LoadKind, RecipeExpr } from "./quant/recipe.js";
export { QUANT_RECIPES, decodeBlockByRecipe, evalRecipeExpr } from "./quant/recipe.js";
export { isGGUF, loadModelConfig, loadTokenizer, openCheckpoint } from "./open.js";
export { TraceError } from "./errors.js";
export { PACKED_GGML_TYPES, ggmlPackedFormat } from "./quant/recipes.js";
export type { FP8ActivationScheme, HFQuantConfig, Int4Layout, ScaleType } from "./quant/hf-formats.js";
export {
  AWQ_GEMM_LAYOUT,
  GPTQ_LAYOUT_V1,
  HF_BLOCK,
  HF_PACKED_FORMATS,
  hfPackedFormat,
  parseHFQuantConfig,
} from "./quant/hf-formats.js";
export { QuantizedHFCheckpoint, readHFQuantConfig, withHFQuantization } from "./hf-quant.js";
export type { ActivationNumerics, HFQuantOptions } from "./hf-activations.js";
export { E4M3_MAX, fp8DynamicQuantize, fp8StaticQuantize } from "./families/fp8-activations.js";
export type { PagedLayout, TraceShape } from "./families/context.js";
export { TraceContext, checkPagedLayout } from "./families/context.js";
export type { GraphKind } from "./families/trace.js";
export { FAMILY_PARTS, shapeOf, traceModel } from "./families/trace.js";
export type { ChannelMixer, DecoderParts, Mixer } from "./families/transformer.js";
export { inverseFrequencies } from "./families/attention.js";
export type { ExpertRole, GlobalRole, LayerRole, TensorNaming, WeightSpec } from "./families/weights.js";
export { ModelWeights, checkpointConsts, dtypeOf, hostData, hostDataOf, storedAs } from "./families/weights.js";
export type { Generation, OpenModelOptions, StepResult } from "./families/forward.js";
export { LoadedModel, argmax } from "./families/forward.js";
export { checkTensorParallel, tensorParallelDimensions } from "./tensor-parallel.js";
