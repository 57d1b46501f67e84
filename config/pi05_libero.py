# Pi0.5 fine-tuned on LIBERO, fast: the dataset's 2 cameras (openpi's empty third slot is never built), horizon 50,
# the pi05 prompt with the discretized state, cuDNN attention, per-layer compile, the micro-batch and recompute that fit
# the GPU (fit=True, memory.plan_fit), bf16 compute with
# fp32 master weights and fp32 AdamW moments, EMA 0.999; optimizer and schedule from openpi's pi05_libero.
#   python prepare.py --src=/data/libero --out=data_cache/libero --tokenizer=checkpoints/paligemma_tokenizer.model   # once
#   torchrun --standalone --nproc_per_node=8 train.py config/pi05_libero.py
#   torchrun --standalone --nproc_per_node=8 train.py config/pi05_libero.py --init_from=resume        # continue
# global batch 256 = micro_batch 32 x grad_accum 1 x 8 GPUs (openpi's 256); on one GPU: --grad_accum=8.
# 30k iterations x 256 = 7.7M samples, ~28 epochs of LIBERO's ~273k frames.
out_dir = 'out/pi05_libero'
init_from = 'checkpoints/pi05_base'  # openpi's pi05_base converted to PyTorch (model.safetensors; docs/numerics.md)
data_dir = 'data_cache/libero'
model_name = 'pi05'                  # action horizon 50, 200 prompt slots (model.configs)
prompt_format = 'pi05'
prompt_bucket = 32
attn = 'sdpa'                        # cuDNN attention: faster than flex here, same memory (bench.py)
compile = True
fit = True                           # micro_batch, grad_accum and recompute: the fastest setting that fits this GPU
                                     # (memory.plan_fit); an H200 takes micro-batch 32 without recompute, 80 GB 32
                                     # with ViT and Gemma MLP recompute (EMA on); train.py prints what it chose
dtype = 'bfloat16'
param_dtype = 'float32'
micro_batch = 32                     # x grad_accum: 32 per GPU, kept by the fit
grad_accum = 1
max_iters = 30000
learning_rate = 5e-5                 # openpi pi05_libero: CosineDecaySchedule(10k, 5e-5, 1M, 5e-5), i.e. constant after warmup
decay_lr = 5e-5
warmup_iters = 10000
lr_decay_iters = 1_000_000
weight_decay = 1e-10
grad_clip = 1.0
ema = True
ema_decay = 0.999
eval_interval = 1000
eval_iters = 4
ckpt_interval = 1000                 # openpi save_interval
keep_last = 3
log_interval = 20
