# eval.py with the sampling noise scaled by SCALE (temperature experiment): python evalt.py SCALE --key=value ...
import os, runpy, sys
sys.path.insert(0, os.getcwd())
import serve
scale = float(sys.argv.pop(1))
orig = serve.Policy.noise
serve.Policy.noise = lambda self, batch: orig(self, batch) * scale
print('noise scale', scale, flush=True)
sys.argv[0] = 'eval.py'
runpy.run_path('eval.py', run_name='__main__')
