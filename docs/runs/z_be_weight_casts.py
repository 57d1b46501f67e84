"""What do fp32 master weights cost a training step in casts? (issue 18; CPU only, no timing)

The compiled units' forward and backward graphs (AOT autograd, after inductor's partitioner) of the `tiny` model,
built and compiled as train.py does (fp32 parameters, bf16 compute, per-layer compile), are searched for:
  - fp32 inputs cast to bf16 in the forward whose cast is a GEMM's weight operand (the Linears' weights);
  - those weights' gradients returned by the backward as a cast to fp32 (for the fp32 .grad);
  - those casts (or their views) handed to the backward (bf16 copies kept alive from forward to backward);
  - those weights cast again in the backward (a recompute from the fp32 weight instead of a saved copy).
The counts are the same for the `small` config (other widths); that they are the same on a GPU is assumed, not
checked. The bytes are then counted over pi05's weights of those GEMMs (on the meta device: nothing is allocated).

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


OP = r'(\w+): "(\w+)\[([^\]]*)\][^"]*" = torch\.ops\.(\w+)\.(\w+)\.\w+\(([^)]*)\)'


def census(body, weights=None):
    """A forward graph (weights None): its GEMMs and the fp32 primals cast to bf16 whose cast (through a
    permute/view) is a GEMM's weight operand -> (gemms, {primal: names of the cast and its views}). A backward graph
    (weights: the paired forward's dict): its GEMMs, how many of those primals' gradients it returns as a cast to
    fp32, how many of those casts (or views) it takes as inputs (saved from the forward) and how many of the fp32
    weights it casts again (recomputed instead of saved)."""
    sig = re.search(r'def forward\(self, (.*?)\):', body, re.S).group(1)
    inputs = dict(re.findall(r'(\w+): "(\w+)\[', sig))
    ops = {m[0]: m for m in re.findall(OP, body)}  # name -> (name, dtype, shape, namespace, op, args)
    gemms = [m for m in ops.values() if m[4] in ('mm', 'addmm', 'bmm')]
    if weights is None:
        weights = {}
        for name, dtype, _, _, op, args in ops.values():
            src = args.split(',')[0].strip()
            if op == 'convert_element_type' and dtype == 'bf16' and inputs.get(src) == 'f32':
                weights.setdefault(src, []).append(name)
        for name, _, _, _, op, args in ops.values():  # views of the casts, in graph order
            src = args.split(',')[0].strip()
            for names in weights.values():
                if op in ('permute', 't', 'view') and src in names:
                    names.append(name)
        used = {g[5].split(',')[-1].strip() for g in gemms}  # the weight operand is the last argument
        weights = {k: v for k, v in weights.items() if used & set(v)}
        return len(gemms), weights
    returned = re.findall(r'^\s*return \((.*)\)\s*$', body, re.M)[-1]  # the graph's own return line, not a code comment
    returned = [r.strip() for r in returned.split(',')]  # the gradient of primals_N is at N - 1
    grad_ops = [ops.get(returned[int(k.split('_')[1]) - 1]) for k in weights]
    grads = sum(1 for op in grad_ops if op and op[4] == 'convert_element_type' and op[1] == 'f32')
    saved = sum(1 for names in weights.values() if set(names) & set(inputs))
    recast = sum(1 for k in weights if any(op[4] == 'convert_element_type' and op[5].split(',')[0].strip() == k
                                           for op in ops.values()))
    return len(gemms), grads, saved, recast


def main():
    torch.manual_seed(0)
    torch._inductor.config.fx_graph_cache = False  # a cache hit logs no graphs
    torch._functorch.config.enable_autograd_cache = False
    handler = Graphs()
    torch._logging.set_logs(aot_graphs=True)
    for name in ('torch._functorch._aot_autograd', 'torch._functorch'):  # where aot_graphs is logged (stderr too)
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).propagate = False
    m = model.build('tiny', attn='sdpa')
    model.apply_compile(m, vision=True)
    m(data.random_batch(m.cfg, 2)).backward()
    torch._logging.set_logs()
    text = '\n'.join(handler.text)
    print(f"tiny, fp32 parameters, bf16 compute, per-layer compile (torch {torch.__version__})")
    print('| graph | GEMMs | fp32 weights cast to bf16 (GEMM operands) | their gradients returned as a cast to fp32 | '
          'their bf16 copies saved for the backward | cast again in the backward |')
    print('|---|---|---|---|---|---|')
    weights = None
    for title, body in split_graphs(text):
        if 'Forward' in title:
            g, weights = census(body)
            print(f'| {title.strip("= ")} | {g} | {len(weights)} | | | |')
        else:
            g, grads, saved, recast = census(body, weights)
            print(f'| {title.strip("= ")} | {g} | | {grads} | {saved} | {recast} |')

    with torch.device('meta'):
        big = model.Pi05(model.configs['pi05'])
    # the bf16 GEMMs' weights: the joint layers', SigLIP's and the final adaRMS norm's (action_out.norm); the action
    # input and time MLPs and action_out_proj run in fp32 (no casts: graph 1 above, graph 4's second GEMM); the last
    # layer's unused prefix weights are frozen and never run
    unused = {id(p) for p in big.unused_parameters()}
    units = list(big.layers) + list(big.vision.encoder.layers) + [big.action_out.norm]
    n = sum(p.numel() for u in units for p in u.parameters() if p.dim() == 2 and id(p) not in unused)
    trained = sum(p.numel() for p in big.parameters() if id(p) not in unused)
    gb = lambda b: n * b / 1e9
    print(f'\npi05: {n / 1e9:.3f} B parameters in the weights of bf16 GEMMs, of {trained / 1e9:.3f} B trained (the rest: '
          f'mostly the token embedding, gathered rather than cast, and vectors)')
    print(f'  forward cast fp32 -> bf16 (read 4 + write 2 bytes): {gb(6):.1f} GB')
    print(f'  weight gradient cast bf16 -> fp32 (read 2 + write 4 bytes): {gb(6):.1f} GB')
    print(f'  bf16 copies saved for the backward: {gb(2):.1f} GB held from forward to backward')
    for tbps in (4.2, 3.0):
        print(f'  at {tbps} TB/s: {gb(12) / tbps:.1f} ms a step for both casts')


if __name__ == '__main__':
    main()
