# CPU demo: the 1.7M-parameter 'demo' Pi0.5 learns a synthetic "move to the red square" dataset (data.make_synthetic:
# coloured shapes seen by a table camera and a wrist camera, 7-dim LIBERO-like actions); written to data_dir on first
# use. A few minutes on a 2-core CPU; the validation loss and the open-loop action error fall clearly.
#   python train.py config/demo.py
# global batch 16 = micro_batch 16 x grad_accum 1 x 1 process; 300 iterations = ~1 epoch of the ~4.7k train frames
out_dir = 'out/demo'
data_dir = 'data_cache/synthetic'
synthetic_episodes = 200
model_name = 'demo'        # model.configs['demo']: 64x64 images, horizon 10, 32 prompt slots
prompt_format = 'pi05'
attn = 'sdpa'
compile = False            # compile time would dominate a run this short
recompute = 'none'
dtype = 'float32'
micro_batch = 16
max_iters = 300
learning_rate = 1e-3       # a small model from scratch takes a far larger lr than pi05 fine-tuning (5e-5)
decay_lr = 1e-4
warmup_iters = 30
lr_decay_iters = 300
ema_decay = 0.99           # the EMA has to follow a 300-step run
eval_interval = 100
eval_iters = 4             # 4 x 16 = 64 held-out samples
ckpt_interval = 0          # one checkpoint, at the end
log_interval = 20
