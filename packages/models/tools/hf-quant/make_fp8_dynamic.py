"""Adds the dynamic-activation reference to fixtures/hf/llama3-fp8 (decision 2610).

Usage: python make_fp8_dynamic.py <fixtures dir>     (needs numpy and ml_dtypes; no PyTorch)

llama3-fp8 is a transformers fine-grained FP8 checkpoint (`quant_method: fp8`, `activation_scheme: dynamic`,
`weight_block_size: [32, 64]`, made by make-hf-quant-fixtures.mjs). Such a checkpoint is run by transformers'
FP8Linear as: each linear's input split into groups of weight_block_size[1] consecutive elements of a row, each
group quantized with its own scale s = max|x_group| / 448 as e4m3(x / s), then multiplied by the block-scaled
FP8 weights. This script reads the stored FP8 bytes and scales again (its own reader, ml_dtypes' e4m3 values),
checks its dequantization against the sha256 the other tool recorded and its exact-activation forward against the
stored prompt logits, then writes `reference-dynamic.safetensors` (`dynamic_prompt_logits` [12, 512]) and
`reference-dynamic.json` (16 greedy ids, the group size) from the float64 forward with that quantization.
"""

import hashlib
import json
import math
import os
import sys

import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fp8_ref import LINEAR, forward, fp8, greedy, read_st, rel  # noqa: E402

ROOT = sys.argv[1]
SRC = os.path.join(ROOT, "hf", "llama3")
DIR = os.path.join(ROOT, "hf", "llama3-fp8")

cfg = json.load(open(os.path.join(DIR, "config.json")))
ref = json.load(open(os.path.join(DIR, "reference.json")))
tf = read_st(os.path.join(SRC, "reference.safetensors"))["prompt_logits"]
check = rel(forward(cfg, read_st(os.path.join(SRC, "model.bf16.safetensors")), json.load(open(os.path.join(SRC, "reference.json")))["prompt_ids"]), tf)
print(f"float64 forward vs transformers float64 (unquantized llama3): rel {check:.2e}")
if not check < 1e-5:
    raise SystemExit("the float64 forward does not reproduce transformers")

T = read_st(os.path.join(DIR, "model.safetensors"))
bn, bk = cfg["quantization_config"]["weight_block_size"]
W = {k: v for k, v in T.items() if not k.endswith(("weight_scale", "weight_scale_inv"))}
for name in [k for k in T if k.endswith(".weight") and k.split(".")[-2] in LINEAR]:
    base, q = name[: -len(".weight")], T[name]
    out, inn = q.shape
    if base + ".weight_scale_inv" in T:  # [ceil(out / bn), ceil(in / bk)] blocks
        s = np.repeat(np.repeat(T[base + ".weight_scale_inv"], bn, 0), bk, 1)[:out, :inn]
    else:  # one per tensor ([1]) or per output channel ([out, 1])
        s = T[base + ".weight_scale"].reshape(-1, 1) * np.ones((1, inn))
    deq = (q.astype(np.float32) * s.astype(np.float32)).astype(np.float32)
    if hashlib.sha256(deq.astype("<f4").tobytes()).hexdigest() != ref["dequant_sha256"][name]:
        raise SystemExit(f"{name}: the dequantization differs from the one recorded in reference.json")
    W[name] = deq.astype(np.float64)

PROMPT = ref["prompt_ids"]
stored = read_st(os.path.join(DIR, "reference.safetensors"))["prompt_logits"]
exact = forward(cfg, W, PROMPT)
print(f"exact-activation forward vs the stored llama3-fp8 reference: rel {rel(exact, stored):.2e}")
if not rel(exact, stored) < 1e-5:
    raise SystemExit("the exact-activation forward does not reproduce the stored reference")


def dynamic(name, x):
    """transformers' act_quant: groups of bk inputs per row, s = max|x| / 448, x' = e4m3(x / s) * s."""
    rows, k = x.shape
    g = x.reshape(rows, math.ceil(k / bk), bk)
    s = np.abs(g).max(-1, keepdims=True) / 448
    return (fp8(g / s) * s).reshape(rows, k)


logits = forward(cfg, W, PROMPT, act=dynamic)
ids = greedy(cfg, W, PROMPT, 16, act=dynamic)
save_file(
    {"dynamic_prompt_logits": logits.astype(np.float32).reshape(len(PROMPT), cfg["vocab_size"])},
    os.path.join(DIR, "reference-dynamic.safetensors"),
)
meta = {
    "reference": "float64 numpy forward (tools/hf-quant/make_fp8_dynamic.py) of the stored FP8 weights with each "
    "linear's input quantized per group of group_size inputs (scale max|x| / 448, e4m3 by ml_dtypes), as "
    "transformers' FP8Linear (activation_scheme dynamic) runs this checkpoint",
    "group_size": bk,
    "prompt_ids": PROMPT,
    "dynamic_greedy_ids": ids,
    "dynamic_vs_exact_rel": round(rel(logits, exact), 6),
}
with open(os.path.join(DIR, "reference-dynamic.json"), "w") as f:
    json.dump(meta, f, indent=1)
    f.write("\n")
print(f"llama3-fp8 dynamic: rel vs exact {meta['dynamic_vs_exact_rel']}; greedy {ids}")
