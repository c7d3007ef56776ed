# Makes test/fixtures/families/: tiny random-weight Hugging Face models of the families the shared fixtures lack
# (Mistral with a sliding window, Qwen2 with q/k/v biases, Gemma 2 with soft-caps and alternating sliding layers, Phi-3
# with fused qkv/gate_up, Mixtral, Qwen3-MoE) and their float64 reference logits and greedy ids from transformers.
# Run where PyTorch + transformers 5 exist: OUT=dir python3 make-family-fixtures.py; unpack families.tar.gz into test/fixtures.
import json,os,tarfile,tempfile,traceback,torch,transformers as T
from safetensors.torch import save_file
O=os.environ["OUT"];W=tempfile.mkdtemp();V=256
c=dict(vocab_size=V,initializer_range=0.25,hidden_size=64,intermediate_size=128,num_hidden_layers=2,num_attention_heads=4,num_key_value_heads=2,max_position_embeddings=512,rms_norm_eps=1e-5)
F=[("mistral",lambda:T.MistralConfig(**c,head_dim=16,rope_theta=1e6,tie_word_embeddings=False,sliding_window=8),"MistralForCausalLM"),
("qwen2",lambda:T.Qwen2Config(**c,rope_theta=1e6,tie_word_embeddings=True),"Qwen2ForCausalLM"),
("gemma2",lambda:T.Gemma2Config(**c,head_dim=16,attn_logit_softcapping=50.0,final_logit_softcapping=30.0,query_pre_attn_scalar=16,sliding_window=8,hidden_activation="gelu_pytorch_tanh"),"Gemma2ForCausalLM"),
("phi3",lambda:T.Phi3Config(**c,tie_word_embeddings=False,pad_token_id=0),"Phi3ForCausalLM"),
("mixtral",lambda:T.MixtralConfig(**{**c,"intermediate_size":32},head_dim=16,num_local_experts=4,num_experts_per_tok=2,tie_word_embeddings=False,sliding_window=None),"MixtralForCausalLM"),
("qwen3moe",lambda:T.Qwen3MoeConfig(**c,head_dim=16,moe_intermediate_size=32,num_experts=4,num_experts_per_tok=2,norm_topk_prob=True,decoder_sparse_step=1,mlp_only_layers=[],tie_word_embeddings=False),"Qwen3MoeForCausalLM")]
P=torch.randint(3,V-3,(1,12),generator=torch.Generator().manual_seed(7))
for n,mk,cl in F:
 try:
  torch.manual_seed(len(n)*101);g=mk()
  for a in("_experts_implementation","experts_implementation"):
   try:setattr(g,a,"eager")
   except Exception:pass
  g._attn_implementation="eager";m=getattr(T,cl)(g).eval()
  with torch.no_grad():
   for _,p in m.named_parameters():
    if p.dim()==1:p.add_(torch.randn_like(p)*0.1)
    p.copy_(p.to(torch.bfloat16).float())
  d=W+"/"+n;m.save_pretrained(d);m=m.double()
  with torch.no_grad():
   L=m(P,use_cache=False).logits[0].float().contiguous();G=m.generate(P,max_new_tokens=8,do_sample=False,use_cache=True,pad_token_id=0);I=G[0,12:].tolist();Fl=m(G,use_cache=False).logits[0].float().contiguous()
  save_file({"prompt_logits":L,"full_logits":Fl},d+"/reference.safetensors")
  json.dump({"family":n,"class":cl,"transformers":T.__version__,"prompt_ids":P[0].tolist(),"greedy_ids":I,"reference":"float64 CPU forward (eager attention) of bf16-exact float32 weights"},open(d+"/reference.json","w"),indent=1)
  print("ok",n,sorted(os.listdir(d)),I,flush=True)
 except Exception:print("FAIL",n,traceback.format_exc()[-1500:],flush=True)
with tarfile.open(O+"/families.tar.gz","w:gz")as t:t.add(W,arcname="families")
