"""train.py with one more model shape, 'cpu128': the 'demo' model (1.7M parameters) at 128 px with 16 px patches (64
tokens per camera, as the 'small' model's tower sees them), small enough to train on Meta-World on a CPU. A record of
session 2026-12-01d (no GPU lent); the checkpoint's policy.json holds the whole shape, so eval.py serves it as is.
    python docs/closed_loop/d2_train_cpu128.py config/metaworld.py --model_name=cpu128 ... (train.py's arguments)"""
import dataclasses
import os
import runpy
import sys

if __name__ == '__main__':  # (worker processes spawned by train.py re-import this file: they must not train)
    sys.path.insert(0, os.getcwd())
    import model
    model.configs['cpu128'] = dataclasses.replace(model.configs['demo'], image_size=128, patch=16, max_token_len=48)
    sys.argv = ['train.py'] + sys.argv[1:]
    runpy.run_path('train.py', run_name='__main__')
