# eval.py with the serving precision / path changed, for diagnosis: python evalx.py MODE --key=value ...
# MODE: default | nofast (no CUDA graph / compile) | fp32w (fp32 weights, bf16 autocast, graphed) | fp32 (all fp32, eager)
import os, runpy, sys
sys.path.insert(0, os.getcwd())
import torch
import model as M
import serve
mode = sys.argv.pop(1)
orig_init, orig_build = serve.Policy.__init__, M.build
if mode in ('nofast', 'fp32'):
    serve.Policy.__init__ = lambda self, *a, fast=True, **k: orig_init(self, *a, fast=False, **k)
if mode in ('fp32w', 'fp32'):
    M.Pi05.set_param_dtype = lambda self, dtype: self
if mode == 'fp32':
    M.build = lambda *a, compute_dtype=None, **k: orig_build(*a, compute_dtype=torch.float32, **k)
print('evalx mode', mode, flush=True)
sys.argv[0] = 'eval.py'
runpy.run_path('eval.py', run_name='__main__')
