"""Makes fixtures/hf/llama3-fp8-static: a compressed-tensors FP8 "W8A8 static" checkpoint of the llama3 fixture.

Usage: python make_fp8_static.py <fixtures dir>     (needs numpy, ml_dtypes and safetensors; no PyTorch)

Nothing here comes from poot: the FP8 bytes are ml_dtypes' float8_e4m3fn rounding (round to nearest even), the file
is written by Hugging Face's own `safetensors` (dtype F8_E4M3), and the float64 llama3 forward below is checked
against transformers' float64 logits of hf/llama3 before anything is written.

Layout, as llm-compressor writes a `FP8` scheme (compressed-tensors `float-quantized`): per linear `<p>.weight`
F8_E4M3 [out, in], `<p>.weight_scale` F32 [out, 1] (channel strategy, absmax / 448) and `<p>.input_scale` F32 [1]
(static tensor strategy: absmax of the linear's input over a calibration prompt / 448; lm_head ignored). The
calibration prompt is the first 4 prompt ids, so the 12-token test prompt has inputs beyond 448 * input_scale:
the saturation of the activation quantization is exercised.

References (float64): `prompt_logits` with activations kept exact (the weights only dequantized, w = f32(q * s_w),
as `weight.to(float32) * scale`), and `static_prompt_logits` with each linear's input quantized as vLLM's static
FP8 path does: q = e4m3(clamp(x / input_scale, -448, 448)), x' = q * input_scale; 16 greedy ids for each.
"""

import hashlib
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fp8_ref import E4M3, LINEAR, forward, fp8, greedy, read_st, rel  # noqa: E402

ROOT = sys.argv[1]
SRC = os.path.join(ROOT, "hf", "llama3")
OUT = os.path.join(ROOT, "hf", "llama3-fp8-static")

cfg = json.load(open(os.path.join(SRC, "config.json")))
ref = json.load(open(os.path.join(SRC, "reference.json")))
W0 = read_st(os.path.join(SRC, "model.bf16.safetensors"))
tf = read_st(os.path.join(SRC, "reference.safetensors"))["prompt_logits"]
check = rel(forward(cfg, W0, ref["prompt_ids"]), tf)
print(f"float64 forward vs transformers float64 (unquantized llama3): rel {check:.2e}")
if not check < 1e-5:
    raise SystemExit("the float64 forward does not reproduce transformers")

PROMPT = ref["prompt_ids"][:12]
CALIB = PROMPT[:4]
tied = "lm_head.weight" not in W0 or np.array_equal(W0["lm_head.weight"], W0["model.embed_tokens.weight"])
linears = sorted(k for k in W0 if k.endswith(".weight") and k.split(".")[-2] in LINEAR)

# Static input scales: absmax of each linear's input over the calibration prompt (unquantized forward) / 448.
amax = {}
forward(cfg, W0, CALIB, observe=lambda n, x: amax.__setitem__(n, max(amax.get(n, 0.0), float(np.abs(x).max()))))

tensors, W, sha, input_scale = {}, dict(W0), {}, {}
for k, a in W0.items():
    if k not in linears and not (tied and k == "lm_head.weight"):
        tensors[k] = a.astype(np.float32)  # bf16-exact values, stored as F32
W.pop("lm_head.weight", None) if tied else None
for name in linears:
    w = W0[name]
    base = name[: -len(".weight")]
    s_w = (np.abs(w).max(1, keepdims=True) / 448).astype(np.float32)
    q = (w / s_w.astype(np.float64)).astype(E4M3)
    s_in = np.array([amax[name] / 448], dtype=np.float32)
    tensors[name] = q
    tensors[base + ".weight_scale"] = s_w
    tensors[base + ".input_scale"] = s_in
    input_scale[name] = float(s_in[0])
    # torch's weight.to(float32) * scale: one float32 rounding of the exact product.
    deq = (q.astype(np.float32) * s_w).astype(np.float32)
    W[name] = deq.astype(np.float64)
    sha[name] = hashlib.sha256(deq.astype("<f4").tobytes()).hexdigest()

saturated = [0]


def static(name, x):
    s = input_scale[name]
    saturated[0] += int((np.abs(x / s) > 448).sum())
    return fp8(x / s) * s


exact = forward(cfg, W, PROMPT)
quant = forward(cfg, W, PROMPT, act=static)
print(f"activations beyond 448 * input_scale on the prompt: {saturated[0]}")
unq = forward(cfg, W0, PROMPT)
ids_exact = greedy(cfg, W, PROMPT, 16)
ids_static = greedy(cfg, W, PROMPT, 16, act=static)

# The rounding table: every finite e4m3 value, every midpoint between neighbours (ties: to even) and the float32
# values next to it on either side, values past ±448 (saturate) and log-uniform random values; expected = ml_dtypes.
finite = np.array([v for v in np.arange(256, dtype=np.uint8).view(E4M3).astype(np.float64) if np.isfinite(v)])
pos = np.unique(np.abs(finite))
mid = ((pos[1:] + pos[:-1]) / 2).astype(np.float32)
rng = np.random.default_rng(2610)
rand = (rng.choice([-1, 1], 2048) * np.exp2(rng.uniform(-14, 10, 2048))).astype(np.float32)
near = np.concatenate([mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(1e9))])
xs = np.concatenate([finite.astype(np.float32), near, -near, np.float32([448, 464, 465, 1e4, -480, -1e30]), rand])
rounding = {
    "x": xs.astype(np.float32),
    "expected": fp8(xs.astype(np.float64)).astype(np.float32),
    # The value of every e4m3 byte 0..255 (NaN for 0x7f and 0xff): the decode oracle of kernelgen's fp8e4m3 kernels.
    "byte_values": np.arange(256, dtype=np.uint8).view(E4M3).astype(np.float32),
}

os.makedirs(OUT, exist_ok=True)
save_file(rounding, os.path.join(OUT, "e4m3-rounding.safetensors"))
save_file(dict(sorted(tensors.items())), os.path.join(OUT, "model.safetensors"))
V = cfg["vocab_size"]
save_file(
    {
        "prompt_logits": exact.astype(np.float32).reshape(len(PROMPT), V),
        "static_prompt_logits": quant.astype(np.float32).reshape(len(PROMPT), V),
    },
    os.path.join(OUT, "reference.safetensors"),
)
qc = {
    "quant_method": "compressed-tensors",
    "format": "float-quantized",
    "quantization_status": "compressed",
    "ignore": ["lm_head"],
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel", "dynamic": False},
            "input_activations": {
                "num_bits": 8,
                "type": "float",
                "symmetric": True,
                "strategy": "tensor",
                "dynamic": False,
            },
        }
    },
}
with open(os.path.join(OUT, "config.json"), "w") as f:
    json.dump({**cfg, "quantization_config": qc}, f, indent=2)
    f.write("\n")
meta = {
    "family": "llama3",
    "source": "hf/llama3/model.bf16.safetensors",
    "prompt_ids": PROMPT,
    "calibration_ids": CALIB,
    "greedy_ids": ids_exact,
    "static_greedy_ids": ids_static,
    "reference": "float64 numpy forward (tools/hf-quant/make_fp8_static.py, checked against transformers' float64 "
    "logits of hf/llama3) of the stored FP8 weights; static_*: each linear's input quantized to e4m3 by ml_dtypes "
    "with its input_scale",
    "saturated_activations": saturated[0],
    "static_vs_exact_rel": round(rel(quant, exact), 6),
    "vs_unquantized_rel": round(rel(exact, unq), 6),
    "input_scale": input_scale,
    "dequant_sha256": sha,
}
with open(os.path.join(OUT, "reference.json"), "w") as f:
    json.dump(meta, f, indent=1)
    f.write("\n")
print(
    f"llama3-fp8-static: {os.path.getsize(os.path.join(OUT, 'model.safetensors'))} bytes; static vs exact activations "
    f"rel {meta['static_vs_exact_rel']:.3e}; greedy exact {ids_exact}; static {ids_static}"
)
