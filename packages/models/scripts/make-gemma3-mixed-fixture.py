# Makes test/fixtures/families/gemma3-mixed: a Gemma 3 text model with one sliding (window 4, RoPE base 1e4) and one
# full-attention layer (RoPE base 1e6), float64 references from transformers. Run: OUT=dir python3 this.py
import json,os,tarfile,tempfile,torch,transformers as T
from safetensors.torch import save_file
O=os.environ["OUT"];W=tempfile.mkdtemp();V=256;n="gemma3-mixed"
g=T.Gemma3TextConfig(vocab_size=V,initializer_range=0.25,hidden_size=64,intermediate_size=128,num_hidden_layers=2,num_attention_heads=4,num_key_value_heads=2,head_dim=16,max_position_embeddings=512,rms_norm_eps=1e-5,query_pre_attn_scalar=16,sliding_window=4,layer_types=["sliding_attention","full_attention"],rope_parameters={"full_attention":{"rope_type":"default","rope_theta":1e6},"sliding_attention":{"rope_type":"default","rope_theta":1e4}},hidden_activation="gelu_pytorch_tanh")
g._attn_implementation="eager";torch.manual_seed(5);m=T.Gemma3ForCausalLM(g).eval()
with torch.no_grad():
 for _,p in m.named_parameters():
  if p.dim()==1:p.add_(torch.randn_like(p)*0.1)
  p.copy_(p.to(torch.bfloat16).float())
P=torch.randint(3,V-3,(1,12),generator=torch.Generator().manual_seed(7))
d=W+"/"+n;m.save_pretrained(d);m=m.double()
with torch.no_grad():
 L=m(P,use_cache=False).logits[0].float().contiguous();G=m.generate(P,max_new_tokens=8,do_sample=False,use_cache=True,pad_token_id=0);I=G[0,12:].tolist();Fl=m(G,use_cache=False).logits[0].float().contiguous()
save_file({"prompt_logits":L,"full_logits":Fl},d+"/reference.safetensors")
json.dump({"family":n,"class":"Gemma3ForCausalLM","transformers":T.__version__,"prompt_ids":P[0].tolist(),"greedy_ids":I,"reference":"float64 CPU forward (eager attention) of bf16-exact float32 weights"},open(d+"/reference.json","w"),indent=1)
print("ok",sorted(os.listdir(d)),I,json.load(open(d+"/config.json")).get("layer_types"),flush=True)
with tarfile.open(O+"/g3.tar.gz","w:gz")as t:t.add(W,arcname="families")
