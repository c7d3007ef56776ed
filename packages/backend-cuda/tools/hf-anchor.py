#!/usr/bin/env python3
"""The same-call anchor of the CUDA decode benches: Hugging Face transformers on the GPU machine's own PyTorch.

usage: python3 hf-anchor.py MODEL_DIR [compiled|compiled-loop|eager ...] [--prompt-tokens 16] [--gen-tokens 128] [--runs 3]

MODEL_DIR is the Llama-3.2-1B-shaped folder of tools/random-model/make-hf.mjs (bf16 weights). For each mode it loads
the model in bf16 on cuda:0 and runs greedy `generate` of exactly --gen-tokens tokens after a --prompt-tokens random
prompt (ids seeded, EOS ignored): one warm-up run (two for `compiled`, where torch.compile builds and records its
CUDA graphs), then --runs timed runs. A logits processor stamps the host clock at every generated token after a
device synchronize (transformers' loop already waits for every token's ids), so decode tok/s counts the steps after
the first, as `poot bench` does: (gen - 1) / (last stamp - first stamp). Prints one JSON line per mode.

`compiled` is the recipe of transformers' docs for fast decoding: `cache_implementation="static"` and
`torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)` (transformers 5 compiles the static-cache
forward inside `generate` itself). `compiled-loop` is a hand-written greedy loop over a StaticCache with the same
compiled forward (cache tensors marked static, a cudagraph step mark per token), timed around the decode steps.
`eager` is the default dynamic cache.
"""

import json
import os
import statistics
import sys
import time


def main() -> None:
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, LogitsProcessor, LogitsProcessorList

    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    model_dir, rest = args[0], args[1:]
    opts = {"--prompt-tokens": 16, "--gen-tokens": 128, "--runs": 3}
    modes = []
    i = 0
    while i < len(rest):
        if rest[i] in opts:
            opts[rest[i]] = int(rest[i + 1])
            i += 2
        else:
            modes.append(rest[i])
            i += 1
    modes = modes or ["compiled", "eager"]
    P, G, runs = opts["--prompt-tokens"], opts["--gen-tokens"], opts["--runs"]

    class Stamps(LogitsProcessor):
        def __init__(self) -> None:
            self.t: list[float] = []

        def __call__(self, input_ids, scores):
            torch.cuda.synchronize()
            self.t.append(time.perf_counter())
            return scores

    def manual(model) -> tuple[list[float], list[float]]:
        """compiled-loop: StaticCache, eager prefill, then a reduce-overhead-compiled forward per token with every
        cache tensor marked as a static address (so CUDA graphs are not skipped for mutated inputs)."""
        from transformers import StaticCache

        try:
            cache = StaticCache(config=model.config, max_cache_len=P + G + 8)
        except TypeError:
            cache = StaticCache(
                config=model.config, max_batch_size=1, max_cache_len=P + G + 8, device="cuda", dtype=torch.bfloat16
            )
        step = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)

        def once() -> tuple[float, float]:
            try:
                cache.reset()
            except Exception:  # noqa: BLE001 - layers not initialized before the first prefill
                pass
            a = time.perf_counter()
            with torch.no_grad():
                out = model(input_ids=ids, past_key_values=cache, cache_position=torch.arange(P, device="cuda"))
                for layer in getattr(cache, "layers", []):
                    for v in vars(layer).values():
                        if isinstance(v, torch.Tensor):
                            torch._dynamo.mark_static_address(v)
                tok = out.logits[:, -1:].argmax(-1)
                torch.cuda.synchronize()
                t1 = time.perf_counter()
                for i in range(G - 1):
                    torch.compiler.cudagraph_mark_step_begin()
                    out = step(input_ids=tok, past_key_values=cache, cache_position=torch.tensor([P + i], device="cuda"))
                    tok = out.logits[:, -1:].argmax(-1).clone()
                torch.cuda.synchronize()
                t2 = time.perf_counter()
            return (G - 1) / (t2 - t1), (t1 - a) * 1000

        warm = [once() for _ in range(3)]
        return [d for d, _ in warm], [once() for _ in range(runs)]

    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 128000, (1, P), generator=gen).cuda()
    for mode in modes:
        t0 = time.perf_counter()
        if os.path.exists(os.path.join(model_dir, "model.safetensors")):
            model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16)
        else:  # a config.json alone: the same shape with transformers' random init (for warming compile caches)
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_dir), dtype=torch.bfloat16)
        model = model.cuda().eval()
        if mode == "compiled-loop":
            try:
                warm, timed = manual(model)
                dec = [d for d, _ in timed]
                print(json.dumps({"anchor": "transformers-compiled-loop", "transformers": transformers.__version__,
                                  "torch": torch.__version__, "promptTokens": P, "genTokens": G,
                                  "decodeTokS": statistics.median(dec), "decodeTokSRuns": dec,
                                  "warmupDecodeTokS": warm, "setupS": time.perf_counter() - t0}), flush=True)
            except Exception as e:  # noqa: BLE001 - report and go on to the next mode
                print(json.dumps({"anchor": "transformers-compiled-loop", "error": f"{type(e).__name__}: {e}"[:500]}),
                      flush=True)
            del model
            torch.cuda.empty_cache()
            continue
        if mode == "compiled":
            model.generation_config.cache_implementation = "static"
            model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
        elif mode != "eager":
            sys.exit(f"hf-anchor: unknown mode {mode!r} (compiled | compiled-loop | eager)")

        def once() -> tuple[float, float]:
            st = Stamps()
            torch.cuda.synchronize()
            a = time.perf_counter()
            with torch.no_grad():
                out = model.generate(
                    ids,
                    max_new_tokens=G,
                    min_new_tokens=G,
                    do_sample=False,
                    logits_processor=LogitsProcessorList([st]),
                    pad_token_id=0,
                )
            torch.cuda.synchronize()
            assert out.shape[1] == P + G, out.shape
            assert len(st.t) == G, len(st.t)
            return (G - 1) / (st.t[-1] - st.t[0]), (st.t[0] - a) * 1000

        warm = [once() for _ in range(2 if mode == "compiled" else 1)]
        timed = [once() for _ in range(runs)]
        dec = [d for d, _ in timed]
        print(
            json.dumps(
                {
                    "anchor": f"transformers-{mode}",
                    "transformers": transformers.__version__,
                    "torch": torch.__version__,
                    "device": torch.cuda.get_device_name(0),
                    "promptTokens": P,
                    "genTokens": G,
                    "decodeTokS": statistics.median(dec),
                    "decodeTokSRuns": dec,
                    "firstTokenMs": statistics.median([f for _, f in timed]),
                    "warmupDecodeTokS": [d for d, _ in warm],
                    "setupS": time.perf_counter() - t0,
                }
            ),
            flush=True,
        )
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
