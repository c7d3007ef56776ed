# Makes fixtures/hf/<family>/ for the families of issue #26: tiny random-weight Hugging Face models (hidden 64,
# vocab 512, the layout of the other fixtures/hf folders) and their reference logits and greedy ids computed by
# transformers in float64 on the CPU with eager attention.
#
# Runs on the GPU machine (PyTorch + transformers there): OUT=dir [ONLY=a,b] python3 tools/make-fixtures/make_families.py
# It writes $OUT/families.tar.gz (one folder per family, plus LOG.txt and the transformers modeling sources it ran,
# under _src/, for reading). Unpack it and copy tokenizer.json from fixtures/hf/llama3 (the same 512-token
# byte-level BPE the vocab size matches) into each family folder.
import json
import os
import tarfile
import tempfile
import traceback

import torch
import transformers as T
from safetensors.torch import save_file

OUT = os.environ["OUT"]
WORK = tempfile.mkdtemp(prefix="fx-")
LOG = []


def say(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.append(s)


say("transformers", T.__version__, "torch", torch.__version__)
for cls in ["GraniteForCausalLM", "SmolLM3ForCausalLM", "Phi3ForCausalLM", "GptOssForCausalLM", "DeepseekV2ForCausalLM"]:
    say("class", cls, "present" if hasattr(T, cls) else "MISSING")

V = 512
COMMON = dict(vocab_size=V, initializer_range=0.25, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-5)


def no_head_dim(**over):
    return {**COMMON, **over}


FAMILIES = [
    # Granite: every multiplier away from its neutral value (attention 0.1 instead of 1/sqrt(16)).
    ("granite", "GraniteConfig", "GraniteForCausalLM", lambda: dict(
        **COMMON, rope_theta=10000.0, tie_word_embeddings=True, embedding_multiplier=2.0,
        residual_multiplier=0.5, attention_multiplier=0.1, logits_scaling=4.0)),
    # SmolLM3: layer 1 is a NoPE layer (no_rope_layers[i] == 0).
    ("smollm3", "SmolLM3Config", "SmolLM3ForCausalLM", lambda: dict(
        **COMMON, rope_theta=2000000.0, tie_word_embeddings=True, no_rope_layers=[1, 0],
        use_sliding_window=False, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    # Phi-4-mini shape (Phi3ForCausalLM): fused qkv / gate_up, GQA, partial RoPE 0.75, tied embeddings.
    ("phi4", "Phi3Config", "Phi3ForCausalLM", lambda: dict(
        **COMMON, rope_theta=10000.0, partial_rotary_factor=0.75, tie_word_embeddings=True, sliding_window=None,
        pad_token_id=0)),
    # gpt-oss: sliding + full layers, attention sinks, q/k/v/o biases, YaRN RoPE, 4 experts top-2 with biases.
    ("gptoss", "GptOssConfig", "GptOssForCausalLM", lambda: dict(
        **no_head_dim(intermediate_size=32), head_dim=16, num_local_experts=4, num_experts_per_tok=2,
        sliding_window=8, tie_word_embeddings=False, attention_bias=True,
        rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                         "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 4096})),
    # DeepSeek-V2-Lite shape: MLA without q LoRA, kv_lora_rank 32, rope 8 + nope 16 per head, v 16; layer 0 dense,
    # layer 1 MoE with 4 routed experts (top-2, greedy, scaled by 1.5) and 1 shared expert.
    ("deepseek2", "DeepseekV2Config", "DeepseekV2ForCausalLM", lambda: dict(
        **no_head_dim(num_key_value_heads=4), q_lora_rank=None, kv_lora_rank=32, qk_nope_head_dim=16,
        qk_rope_head_dim=8, v_head_dim=16, first_k_dense_replace=1, n_routed_experts=4, n_shared_experts=1,
        num_experts_per_tok=2, moe_intermediate_size=32, topk_method="greedy", norm_topk_prob=False,
        routed_scaling_factor=1.5, rope_theta=10000.0, tie_word_embeddings=False)),
]

def make_config(cfg_cls, kw):
    try:
        return getattr(T, cfg_cls)(**kw)
    except Exception as e:
        # transformers versions differ on where RoPE parameters go: retry with them in rope_parameters.
        say(cfg_cls, "rejected the kwargs:", repr(e)[:300], "- retrying with rope_parameters")
        kw = dict(kw)
        rp = dict(kw.pop("rope_parameters", None) or {"rope_type": "default"})
        for k in ("rope_theta", "partial_rotary_factor"):
            if k in kw:
                rp[k] = kw.pop(k)
        return getattr(T, cfg_cls)(**kw, rope_parameters=rp)


prompt = torch.randint(3, 500, (1, 20), generator=torch.Generator().manual_seed(99))  # same prompt as fixtures/hf

ONLY = set(filter(None, os.environ.get("ONLY", "").split(",")))  # e.g. ONLY=granite,smollm3 (default: all)
for name, cfg_cls, cls, kwargs in FAMILIES:
    if ONLY and name not in ONLY:
        continue
    try:
        torch.manual_seed(sum(map(ord, name)))
        if not hasattr(T, cls):
            raise RuntimeError(f"{cls} missing in transformers {T.__version__}")
        cfg = make_config(cfg_cls, kwargs())
        cfg._attn_implementation = "eager"
        for attr in ("_experts_implementation", "experts_implementation"):
            try:
                setattr(cfg, attr, "eager")
            except Exception:
                pass
        model = getattr(T, cls)(cfg).eval()
        with torch.no_grad():
            for n, p in model.named_parameters():
                # norm weights are 1 and biases/sinks 0 at init: make them visibly non-trivial; all bf16-exact
                if p.dim() == 1 or float(p.abs().max()) == 0.0:
                    p.add_(torch.randn_like(p) * 0.1)
                p.copy_(p.to(torch.bfloat16).to(torch.float32))
        d = f"{WORK}/{name}"
        os.makedirs(d, exist_ok=True)
        model.save_pretrained(d, safe_serialization=True)
        sd = {k: v.detach().to(torch.bfloat16).contiguous().clone() for k, v in model.state_dict().items()}
        save_file(sd, f"{d}/model.bf16.safetensors", metadata={"format": "pt"})
        for k, v in model.state_dict().items():
            say(" ", name, k, list(v.shape))
        m64 = model.double()
        with torch.no_grad():
            logits = m64(prompt, use_cache=False).logits[0].float().contiguous()
            gen = m64.generate(prompt, max_new_tokens=16, do_sample=False, use_cache=True, pad_token_id=0)
            gen_ids = gen[0, prompt.shape[1]:].tolist()
            full = m64(gen, use_cache=False).logits[0].float().contiguous()
        save_file({"prompt_logits": logits, "full_logits": full}, f"{d}/reference.safetensors")
        json.dump({"family": name, "class": cls, "transformers": T.__version__, "prompt_ids": prompt[0].tolist(),
                   "greedy_ids": gen_ids,
                   "reference": "float64 CPU forward (eager attention) of the float32 weights (bf16-exact values)",
                   "prompt_logits": "[T, V] logits of the prompt", "full_logits": "[T+16, V] logits of prompt+greedy"},
                  open(f"{d}/reference.json", "w"), indent=1)
        say("model", name, "params", sum(p.numel() for p in model.parameters()), "greedy", gen_ids)
        mod = __import__(type(model).__module__, fromlist=["x"])
        os.makedirs(f"{WORK}/_src", exist_ok=True)
        open(f"{WORK}/_src/{name}.py", "w").write(open(mod.__file__).read())
    except Exception:
        say("MODEL FAIL", name, traceback.format_exc()[-2500:])

try:
    import transformers.modeling_rope_utils as R
    os.makedirs(f"{WORK}/_src", exist_ok=True)
    open(f"{WORK}/_src/modeling_rope_utils.py", "w").write(open(R.__file__).read())
except Exception:
    say("rope utils source:", traceback.format_exc()[-500:])

open(f"{WORK}/LOG.txt", "w").write("\n".join(LOG))
os.makedirs(OUT, exist_ok=True)
with tarfile.open(f"{OUT}/families.tar.gz", "w:gz") as t:
    t.add(WORK, arcname="families")
say("tar bytes", os.path.getsize(f"{OUT}/families.tar.gz"))
