"""
Layered compilation lets DDP overlap the gradient all-reduce with backward: each compiled
joint layer's backward is its own autograd function, so a layer's gradient bucket is launched while earlier layers
are still in backward. Two gloo processes on the CPU record, with a DDP comm hook, when each bucket is launched and
when the backward of the first layer has finished. Run: python -m pytest -q test_overlap.py
"""
import datetime
import faulthandler
import os
import tempfile
import time
from dataclasses import replace

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import model as M


LIMIT_S = 300  # one CI run hung here for 18 minutes (2026-12-05): a stuck worker now prints its stack and the test fails


def _worker(rank, world, init_file, compiled, out):
    faulthandler.dump_traceback_later(LIMIT_S - 30, exit=True)  # a stuck worker: its stack on stderr, then exit 1
    import torch._dynamo
    torch._dynamo.config.optimize_ddp = False  # we split the graph per layer ourselves
    dist.init_process_group('gloo', init_method=f'file://{init_file}', rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))  # fail rather than hang
    torch.manual_seed(0)
    cfg = replace(M.configs['tiny'], depth=6, width=128, mlp=512)
    m = M.Pi05(cfg, compute_dtype=torch.float32)
    if compiled:
        M.apply_compile(m, vision=False, backend='aot_eager')
    # one joint layer's gradients are ~0.5 MB: 0.5 MB buckets follow the layers
    ddp = torch.nn.parallel.DistributedDataParallel(m, bucket_cap_mb=0.5)
    events = []

    def hook(state, bucket):
        events.append(('bucket', bucket.index()))
        fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
        return fut.then(lambda f: f.value()[0] / world)
    ddp.register_comm_hook(None, hook)
    # the image tokens feed only layer 0, so their gradient exists once layer 0's backward has finished
    def mark(mod, inp, out):
        out.register_hook(lambda g: events.append(('layer0_done', -1)))
    m.projector.register_forward_hook(mark)
    g = torch.Generator().manual_seed(rank)
    B = 2
    batch = dict(images=torch.randint(0, 256, (B, 2, 3, cfg.image_size, cfg.image_size), dtype=torch.uint8, generator=g),
                 image_mask=torch.ones(B, 2, dtype=torch.bool), tokens=torch.randint(1, 100, (B, 8), generator=g),
                 token_mask=torch.ones(B, 8, dtype=torch.bool), actions=torch.randn(B, cfg.action_horizon, 32, generator=g))
    for _ in range(2):  # the second step runs with DDP's rebuilt (execution-order) buckets
        events.clear()
        ddp(batch).backward()
    if rank == 0:
        torch.save(events, out)
    dist.barrier()  # both ranks leave together
    dist.destroy_process_group()
    faulthandler.cancel_dump_traceback_later()


def run(compiled):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, 'events.pt')
        ctx = mp.start_processes(_worker, args=(2, os.path.join(d, 'init'), compiled, out), nprocs=2,
                                 start_method='spawn', join=False)
        deadline = time.monotonic() + LIMIT_S
        while not ctx.join(timeout=5):  # raises when a worker fails or exits early
            if time.monotonic() > deadline:
                for p in ctx.processes:
                    p.kill()
                raise AssertionError(f'the two gloo workers did not finish within {LIMIT_S} s')
        return torch.load(out)


def test_buckets_launch_before_first_layer_backward_finishes():
    events = run(compiled=True)
    done = events.index(('layer0_done', -1))
    before = [e for e in events[:done] if e[0] == 'bucket']
    total = sum(e[0] == 'bucket' for e in events)
    assert total >= 4, f"expected several buckets, got {total}: {events}"
    # every bucket but the ones holding layer 0 and the vision tower is in flight before layer 0's backward ends
    assert len(before) >= total - 2, f"only {len(before)} of {total} buckets launched before layer 0 finished: {events}"
