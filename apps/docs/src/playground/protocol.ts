// Messages between the playground page and its generation worker.

/** Page -> worker: generate after `prompt`. */
export interface GenerateRequest {
  readonly prompt: string;
  readonly maxTokens: number;
  readonly threads: number;
}

/** Worker -> page: progress, streamed text, the end with its figures, or an error. */
export type WorkerEvent =
  | { readonly kind: "status"; readonly text: string }
  | { readonly kind: "text"; readonly text: string }
  | {
      readonly kind: "done";
      readonly ids: number[];
      readonly text: string;
      readonly promptIds: number[];
      readonly device: string;
      readonly decodeTps: number;
      readonly prefillTps: number;
      readonly finish: string;
    }
  | { readonly kind: "error"; readonly name: string; readonly code?: string; readonly message: string };
