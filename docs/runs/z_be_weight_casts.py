"""What do fp32 master weights cost a training step in casts? (issue 18; CPU only, no timing)

The compiled units' forward and backward graphs (AOT autograd, after inductor's partitioner) of the `tiny` model,
built and compiled as train.py does (fp32 parameters, bf16 compute, per-layer compile), are searched for:
  - fp32 2-D inputs (the Linears' weights) cast to bf16 in the forward;
  - the same casts repeated in the backward (a recompute from the fp32 primal instead of a saved bf16 copy);
  - 2-D tensors cast to fp32 in the backward (the bf16 weight gradients cast for the fp32 .grad);
  - bf16 weight-shaped tensors saved for the backward (the cast copies kept alive over the step).
The graph structure does not depend on the device or the widths, so the counts carry over to pi05 on a GPU; the
bytes are then counted over pi05's weights in those units (on the meta device: nothing is allocated).

    PYTHONPATH=. python docs/runs/z_be_weight_casts.py 2>/dev/null  # stderr: the graphs themselves
"""
import logging
import re

import torch
import torch._functorch.config
import torch._inductor.config

import data
import model


class Graphs(logging.Handler):
    def __init__(self):
        super().__init__()
        self.text = []

    def emit(self, record):
        self.text.append(record.getMessage())


def split_graphs(text):
    """[(title, body)] of every 'Forward graph N' / 'Backward graph N' in the logged text."""
    parts = re.split(r'(===== (?:Forward|Backward) graph \d+ =====)', text)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def census(body, forward_casts=()):
    """GEMMs, fp32 2-D primals cast to bf16 (their names), 2-D casts to fp32, and which of forward_casts (the
    forward's weight casts) are inputs of this graph (saved for the backward)."""
    sig = re.search(r'def forward\(self, (.*?)\):', body, re.S).group(1)
    inputs = dict(re.findall(r'(\w+): "(\w+)\[', sig))
    casts = re.findall(r'(\w+): "(\w+)\[([^\]]*)\][^"]*" = torch\.ops\.prims\.convert_element_type\.default\((\w+), '
                       r'torch\.(\w+)\)', body)
    weight_casts = [c[0] for c in casts if c[3].startswith('primals') and inputs.get(c[3]) == 'f32'
                    and c[2].count(',') == 1 and c[1] == 'bf16']
    for name, src in re.findall(r'(\w+): "[^"]*" = torch\.ops\.aten\.(?:permute|t|view)\.default\((\w+)', body):
        if src in weight_casts:
            weight_casts.append(name)  # a view of a cast weight (what the backward's GEMM reads)
    grad_casts = [c for c in casts if c[1] == 'f32' and c[2].count(',') == 1]
    saved = [n for n in inputs if n in forward_casts]
    gemms = len(re.findall(r'aten\.(?:mm|addmm|bmm)\.default', body))
    return gemms, weight_casts, len(grad_casts), len(saved)


def main():
    torch.manual_seed(0)
    torch._inductor.config.fx_graph_cache = False  # a cache hit logs no graphs
    torch._functorch.config.enable_autograd_cache = False
    handler = Graphs()
    torch._logging.set_logs(aot_graphs=True)
    for name in ('torch._functorch._aot_autograd', 'torch._functorch'):  # where aot_graphs is logged, not to stderr
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).propagate = False
    m = model.build('tiny', attn='sdpa')
    model.apply_compile(m, vision=True)
    m(data.random_batch(m.cfg, 2)).backward()
    torch._logging.set_logs()
    text = '\n'.join(handler.text)
    print(f"tiny, fp32 parameters, bf16 compute, per-layer compile (torch {torch.__version__})")
    print('| graph | GEMMs | fp32 weights cast to bf16 | 2-D casts to fp32 (weight gradients) | weight casts saved from the forward |')
    print('|---|---|---|---|---|')
    forward_casts = []
    for title, body in split_graphs(text):
        g, w, gr, saved = census(body, forward_casts)
        forward_casts = w if 'Forward' in title else []
        n_cast = sum(1 for n in w if n.startswith('convert_element_type'))
        print(f'| {title.strip("= ")} | {g} | {n_cast} | {gr} | {saved if "Backward" in title else ""} |')

    with torch.device('meta'):
        big = model.Pi05(model.configs['pi05'])
    units = list(big.layers) + [big.action_in, big.action_out] + list(big.vision.encoder.layers)
    n = sum(p.numel() for u in units for p in u.parameters() if p.dim() == 2)
    rest = sum(p.numel() for p in big.parameters()) - sum(p.numel() for u in units for p in u.parameters())
    gb = lambda b: n * b / 1e9
    print(f'\npi05: {n / 1e9:.3f} B parameters in 2-D weights of the compiled units ({rest / 1e9:.3f} B elsewhere, '
          f'mostly the token embedding, which is gathered, not cast)')
    print(f'  forward cast fp32 -> bf16 (read 4 + write 2 bytes): {gb(6):.1f} GB')
    print(f'  weight gradient cast bf16 -> fp32 (read 2 + write 4 bytes): {gb(6):.1f} GB')
    print(f'  bf16 copies saved for the backward: {gb(2):.1f} GB held from forward to backward')
    for tbps in (4.2, 3.0):
        print(f'  at {tbps} TB/s: {gb(12) / tbps:.1f} ms a step for both casts')


if __name__ == '__main__':
    main()
