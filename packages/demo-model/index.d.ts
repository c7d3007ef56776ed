/**
 * The demo model poot runs by default, as a package.
 * @packageDocumentation
 */

/** The folder holding the demo model (config.json, model.safetensors, tokenizer.json), or null when absent. */
export declare const demoModelDir: string | null;
