/**
 * The poot kernel library (imported kernels compiled from the kernel DSL) and the kernel synthesizers.
 * @packageDocumentation
 */
export { KernelgenError, invariant } from "./errors.js";
export type { KernelgenErrorCode, KernelgenErrorContext } from "./errors.js";
export { IMPORTED_KERNELS, importedKernel } from "./library.js";
export type { ImportedKernelName } from "./library.js";
