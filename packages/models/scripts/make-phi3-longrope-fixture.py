# Makes test/fixtures/families/phi3-longrope: Phi-3 with LongRoPE (original context 16, max 64): the 12-token prompt uses
# the short factors, generation crosses into the long ones. Float64 references from transformers. Run: OUT=dir python3 this.py
import json,os,tarfile,tempfile,traceback,torch,transformers as T
from safetensors.torch import save_file
O=os.environ["OUT"];W=tempfile.mkdtemp();V=256;n="phi3-longrope"
S=[1.0,1.05,1.1,1.2,1.3,1.5,1.8,2.0];L=[1.0,1.5,2.5,4.0,6.0,9.0,12.0,16.0]
try:
 g=T.Phi3Config(vocab_size=V,initializer_range=0.25,hidden_size=64,intermediate_size=128,num_hidden_layers=2,num_attention_heads=4,num_key_value_heads=2,max_position_embeddings=64,original_max_position_embeddings=16,rms_norm_eps=1e-5,tie_word_embeddings=False,pad_token_id=0,rope_scaling={"rope_type":"longrope","short_factor":S,"long_factor":L,"original_max_position_embeddings":16})
except Exception:
 print(traceback.format_exc()[-1200:]);g=T.Phi3Config(vocab_size=V,initializer_range=0.25,hidden_size=64,intermediate_size=128,num_hidden_layers=2,num_attention_heads=4,num_key_value_heads=2,max_position_embeddings=64,original_max_position_embeddings=16,rms_norm_eps=1e-5,tie_word_embeddings=False,pad_token_id=0,rope_parameters={"rope_type":"longrope","rope_theta":10000.0,"short_factor":S,"long_factor":L,"original_max_position_embeddings":16})
g._attn_implementation="eager";torch.manual_seed(11);m=T.Phi3ForCausalLM(g).eval()
print("rope",getattr(g,"rope_parameters",None),flush=True)
with torch.no_grad():
 for _,p in m.named_parameters():
  if p.dim()==1:p.add_(torch.randn_like(p)*0.1)
  p.copy_(p.to(torch.bfloat16).float())
P=torch.randint(3,V-3,(1,12),generator=torch.Generator().manual_seed(7))
d=W+"/"+n;m.save_pretrained(d);m=m.double()
with torch.no_grad():
 L0=m(P,use_cache=False).logits[0].float().contiguous();G=m.generate(P,max_new_tokens=8,do_sample=False,use_cache=True,pad_token_id=0);I=G[0,12:].tolist();Fl=m(G,use_cache=False).logits[0].float().contiguous()
save_file({"prompt_logits":L0,"full_logits":Fl},d+"/reference.safetensors")
json.dump({"family":n,"class":"Phi3ForCausalLM","transformers":T.__version__,"prompt_ids":P[0].tolist(),"greedy_ids":I,"reference":"float64 CPU forward (eager attention) of bf16-exact float32 weights; prompt 12 tokens (short factors), generation crosses original_max_position_embeddings=16 (long factors)"},open(d+"/reference.json","w"),indent=1)
print("ok",sorted(os.listdir(d)),I,flush=True);print(open(d+"/config.json").read())
with tarfile.open(O+"/lr.tar.gz","w:gz")as t:t.add(W,arcname="families")
