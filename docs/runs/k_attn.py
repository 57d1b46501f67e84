"""Issue 17: the grouped denoising attention's products at pi05's batch-1 shapes (8 query heads x 50 actions over one
K/V head of ~600 keys, head dim 256), timed alone on the GPU: fp32 FFMA (today), TF32, bf16 inputs with fp32 output
(torch.bmm out_dtype, CUDA only), and bf16 logits; with each one's error against fp64. Prepared 2026-12-02 session 3."""
import time, torch
torch.manual_seed(0)
B, G, Tq, Tk, D = 1, 8, 50, 600, 256
q = torch.randn(B, G * Tq, D, device='cuda', dtype=torch.bfloat16)
k = torch.randn(B, Tk, D, device='cuda', dtype=torch.bfloat16)
ref = torch.bmm(q.double(), k.double().transpose(1, 2))
def t(fn, n=200):
    for _ in range(10): fn()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): fn()
    torch.cuda.synchronize(); return (time.perf_counter() - t0) / n * 1e6
variants = {
    'fp32 (today)': lambda: torch.bmm(q.float(), k.float().transpose(1, 2)),
    'bf16 in, fp32 out (out_dtype)': lambda: torch.bmm(q, k.transpose(1, 2), out_dtype=torch.float32),
    'bf16 logits then float()': lambda: torch.bmm(q, k.transpose(1, 2)).float(),
}
for name, fn in variants.items():
    try:
        out = fn(); err = ((out.double() - ref).norm() / ref.norm()).item()
        print(f'{name:32s} {t(fn):7.1f} us   rel err vs fp64 {err:.2e}', flush=True)
    except Exception as e:
        print(f'{name:32s} failed: {type(e).__name__}: {str(e)[:200]}', flush=True)
torch.backends.cuda.matmul.allow_tf32 = True
fn = variants['fp32 (today)']; out = fn()
print(f'{"tf32":32s} {t(fn):7.1f} us   rel err vs fp64 {((out.double() - ref).norm() / ref.norm()).item():.2e}')
