# openpi's pi05_libero (src/openpi/training/config.py): action horizon 10, the pi0-style prompt without state
# (discrete_state_input=False), global batch 256, 30k steps, linear warmup over 10k steps to a constant 5e-5,
# AdamW(0.9, 0.95, 1e-8, wd 1e-10), clip 1.0, EMA 0.999 (JAX trainer). openpi's third camera slot (the empty right
# wrist, masked in every sample) is not built: dropping it leaves the loss unchanged (test_pruned_matches_padded).
#   torchrun --standalone --nproc_per_node=8 train.py config/pi05_libero_openpi.py
# global batch 256 = micro_batch 32 x grad_accum 1 x 8 GPUs; on 4 GPUs: --grad_accum=2; on 1 GPU: --grad_accum=8.
out_dir = 'out/pi05_libero_openpi'
init_from = 'checkpoints/pi05_base'  # openpi's pi05_base converted to PyTorch (model.safetensors; docs/numerics.md)
data_dir = 'data_cache/libero'
model_name = 'pi05'
action_horizon = 10                  # overrides the model config's 50
prompt_format = 'pi0'
attn = 'sdpa'                        # cuDNN attention: faster than flex here, same memory (bench.py)
compile = True
recompute = 'vit'
dtype = 'bfloat16'
param_dtype = 'float32'              # the JAX trainer's fp32 params (openpi's PyTorch trainer: pure bf16)
micro_batch = 32
grad_accum = 1
max_iters = 30000
learning_rate = 5e-5
decay_lr = 5e-5
warmup_iters = 10000
lr_decay_iters = 1_000_000
weight_decay = 1e-10
grad_clip = 1.0
ema = True
ema_decay = 0.999
seed = 42
eval_interval = 1000
eval_iters = 4
ckpt_interval = 1000
keep_last = 3
log_interval = 100                   # openpi log_interval
