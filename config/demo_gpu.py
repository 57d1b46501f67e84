# GPU demo: the same 'demo' model on the instruction-grounded task: three distinct shapes at 64 px, the instruction
# names one ("move to the green triangle"), so the policy must read the prompt and find that object.
#   python train.py config/demo_gpu.py && python eval.py --ckpt=out/demo_gpu --episodes=100
# global batch 64 = micro_batch 64 x grad_accum 1 x 1 GPU; 4000 expert episodes written to data_dir on first use.
# The model is tiny and launch-bound: fp32 and eager cost no more than bf16 and compile here.
out_dir = 'out/demo_gpu'
data_dir = 'data_cache/synthetic3_64'
synthetic_episodes = 4000
synthetic_objects = 3
model_name = 'demo'        # 64 px, horizon 10, 32 prompt slots
prompt_format = 'pi05'
compile = False
dtype = 'float32'
augment = 'none'
loss_dims = 7
micro_batch = 64
max_iters = 12000
learning_rate = 1e-3       # H200, closed loop after 6000 iterations: 1e-3 58%; 2e-3 76% in one run, 7% in another;
                           # 3e-3 12%
decay_lr = 1e-4
warmup_iters = 100
lr_decay_iters = 12000
eval_interval = 2000
eval_iters = 4
ckpt_interval = 2000
keep_last = 1
log_interval = 200
