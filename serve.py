"""
Serve a trained checkpoint over openpi's websocket policy protocol, so clients written for openpi (the
`openpi-client` package's WebsocketClientPolicy, openpi's examples/libero/main.py) work unchanged.

    python serve.py --ckpt=out/demo                               # the run's newest checkpoint, on 127.0.0.1:8000
    python serve.py --ckpt=out/pi05_libero/ckpt_30000 --host=0.0.0.0 --api_key=secret   # other machines, with a key

    from openpi_client import websocket_client_policy              # the robot or simulator side
    client = websocket_client_policy.WebsocketClientPolicy('127.0.0.1', 8000)
    chunk = client.infer({'observation/image': img, 'observation/wrist_image': wrist,     # uint8 (H, W, 3)
                          'observation/state': state, 'prompt': 'put the bowl on the plate'})['actions']

The protocol (openpi's): on connect the server sends a msgpack metadata dict; every request is an observation dict
packed with msgpack, numpy arrays as {__ndarray__, data, dtype, shape} maps; every reply is a dict with 'actions'
(action horizon x the dataset's action dim, in its units) and timing fields, or, when a request fails, a string
naming the problem (the server goes on serving). Requests of all clients are served one at a time.

`Policy` does exactly the training-time preprocessing (resize with padding, uint8 -> [-1, 1], state normalisation,
the checkpoint's prompt format and tokenizer) and unnormalises the actions; everything it needs is in the checkpoint
directory (checkpoint.py: policy.json, norm_stats.json, tokenizer.model), so a checkpoint copied alone serves, and a
run directory (--ckpt=out/demo) serves its newest good checkpoint.
On a GPU, `GraphedSampler` compiles the inference layers and replays all of sample_actions (prefix pass and the
10 denoising steps) as one CUDA graph per input shape, and one more per shape for real-time-chunking requests;
on Hopper and later its kernels use programmatic dependent launch (--pdl=False turns that off).
"""
import contextlib
import hmac
import os
import sys
import threading
import time
import traceback
import zlib
from http import HTTPStatus

import numpy as np
import torch

import checkpoint
import data
import model as M

# -----------------------------------------------------------------------------
# config (python serve.py --key=value)
ckpt = ''                  # a checkpoint directory written by train.py (out_dir/ckpt_<iter>), or out_dir: its newest
weights = 'auto'           # 'auto' (ema.safetensors when there is one) | 'ema' | 'model' | 'init' (random weights)
host = '127.0.0.1'         # 0.0.0.0 to accept other machines
port = 8000
api_key = ''               # if set, clients must send 'Authorization: Api-Key <key>' (openpi_client's api_key=)
max_request_mb = 16        # larger requests close their connection
keys = ''                  # observation keys, e.g. 'image=agentview,state=robot_state'; default observation/<camera>,
                           # observation/state and prompt (openpi's LIBERO client)
device = 'auto'            # 'auto' | 'cuda' | 'cpu'
fast = True                # CUDA: compiled layers + CUDA graphs (first request of a new prompt length captures)
pdl = True                 # with fast: kernels with programmatic dependent launch where the GPU has it (compute
                           # capability 9+; GraphedSampler's pdl=None); False: inductor's own setting
noise_seed = -1            # >= 0: noise drawn from the seed and the observation (the same request, the same reply)
noise_scale = 1.0          # the sampling noise's std (openpi: 1); 0 integrates the flow from its mean, deterministically
# -----------------------------------------------------------------------------

# msgpack with numpy arrays, in openpi_client's encoding (so both ends decode each other's messages)


def _encode(obj):
    if isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.kind in 'VOc':
        raise TypeError(f'cannot send arrays of dtype {obj.dtype}')
    if isinstance(obj, np.ndarray):
        return {b'__ndarray__': True, b'data': np.ascontiguousarray(obj).tobytes(), b'dtype': obj.dtype.str,
                b'shape': obj.shape}
    if isinstance(obj, np.generic):
        return {b'__npgeneric__': True, b'data': obj.item(), b'dtype': obj.dtype.str}
    return obj


def _decode(obj):
    try:
        if b'__ndarray__' in obj:
            return np.frombuffer(obj[b'data'], dtype=np.dtype(obj[b'dtype'])).reshape(obj[b'shape'])
        if b'__npgeneric__' in obj:
            return np.dtype(obj[b'dtype']).type(obj[b'data'])
    except (KeyError, TypeError, ValueError) as err:
        raise ObservationError(f'a numpy array in the request is not in openpi_client\'s encoding ({_short(err)})')
    return obj


def packb(obj):
    import msgpack
    return msgpack.packb(obj, default=_encode)


def unpackb(raw):
    import msgpack
    try:
        return msgpack.unpackb(raw, object_hook=_decode)
    except ObservationError:
        raise
    except Exception as err:  # msgpack's own errors have no common base class
        raise ObservationError(f'the request is not a msgpack message ({type(err).__name__}: {_short(err)})') from None


def _short(x, n=200):
    """str(x) cut to n characters: error messages never echo a request at length."""
    s = str(x)
    return s if len(s) <= n else s[:n] + f'... ({len(s)} characters)'


def _key_list(obs, n=12):
    keys = [_short(repr(k), 60) for k in list(obs)[:n]]
    return '[' + ', '.join(keys) + (f', ... ({len(obs)} keys)' if len(obs) > n else '') + ']'

# -----------------------------------------------------------------------------
# the policy: checkpoint directory -> infer(observation) -> action chunk


class ObservationError(ValueError):
    """A request the policy cannot use; the message names the key and what is wrong."""


def pdl_on(pdl, device):
    """GraphedSampler's pdl resolved for a CUDA device: None -> whether it has programmatic dependent launch
    (compute capability 9 or more), else bool(pdl)."""
    return torch.cuda.get_device_capability(device)[0] >= 9 if pdl is None else bool(pdl)


class GraphedSampler:
    """sample_actions replayed from a CUDA graph, one graph per input shape (batch size, camera slots, prompt
    slots), captured on first use; with compile=True the inference layers are compiled first (model.compile_inference),
    which cuts the kernels per call by about three. The graph reads its inputs from static buffers and writes its
    output to a static buffer, so a call is: copy in, replay, copy out.
    denoise_attn: sample_actions' for the plain denoising steps ('grouped'; None runs the layers' sdpa);
    prefix_attn: its for the prefix pass (None: the layers' sdpa).
    whole_step (with compile): each plain denoising step compiled as one graph rather than layer by layer.
    small_gemm: the action expert's projections through small_gemm.py's kernel where it can (batch 1; opt-in; set
    on the model, model.use_small_gemm, for each capture of this sampler).
    pdl: inductor's Triton kernels compiled with programmatic dependent launch (Hopper and later: a kernel starts
    while the one before it finishes and waits for that one's results before reading them; the graph's gaps between
    kernels shrink: pi05 at batch 1 16.6 -> 14.9 ms on an H200). None (the default): on where the GPU has it (compute
    capability 9 or more); True: on; False: inductor's own setting (TORCHINDUCTOR_ENABLE_PDL). It applies to what
    compiles during this sampler's plain captures; a guided capture (real-time chunking, which the test does not
    cover) adds no PDL kernels of its own, and kernels it shares with plain captures (SigLIP, the prefix pass) keep
    the setting of whichever capture compiled them first. Layers compiled before keep their kernels. Its GPU test:
    test_pdl_sampler_matches_and_every_kernel_waits_before_releasing_the_next."""

    def __init__(self, model, num_steps=10, compile=True, fuse=True, denoise_attn='grouped', compile_mode=None,
                 whole_step=True, prefix_attn=None, small_gemm=False, pdl=None):
        self.model, self.num_steps, self.graphs, self.prefix_attn = model, num_steps, {}, prefix_attn
        self.pdl = pdl
        # pi05 on one H100, 2026-12-06 (python bench.py --infer=True, docs/logs/infer_2026-12-06b_h100_full_order.log):
        # 'grouped' 18.8 / 55.9 / 201.3 ms at batch 1 / 8 / 32 against sdpa's 27.4 / 63.7 / 209.3; whole steps 18.6 /
        # 55.6 / 200.0 against 19.1 / 56.0 / 201.9 layer by layer (infer_2026-12-06b_h100_grouped_step.log)
        M.check_choice('denoise_attn', denoise_attn, M.DENOISE_ATTN)  # here, not at the first request's capture
        M.check_choice('prefix_attn', prefix_attn, M.PREFIX_ATTN)
        self.denoise_attn = denoise_attn
        if fuse:  # q/k/v and gate/up as one GEMM each (model.fuse_projections): pi05 batch 1 27.9 -> 25.6 ms on an H200
            M.fuse_projections(model)
        if compile:  # compile_mode: torch.compile's (None: inductor's default; 'max-autotune-no-cudagraphs' tunes GEMMs)
            M.compile_inference(model, mode=compile_mode, whole_step=whole_step)
        self.small_gemm = small_gemm

    def capture(self, batch, noise, guided=None):
        static = {k: v.clone() for k, v in batch.items()}
        static_noise = noise.clone()
        if not M.fused_intact(self.model):
            raise RuntimeError('fused projections no longer hold the weights (a dtype or device change after '
                               'model.fuse_projections): fuse again before capturing')
        kw = {}
        if guided is not None:  # real-time chunking: the guidance's autograd pass is captured too, beta an input
            kw = dict(guide=guided[0].clone(), guide_weights=guided[1].clone(),
                      max_guidance=torch.tensor(float(guided[2]), dtype=torch.float64, device=noise.device))
        M.use_small_gemm(self.model, self.small_gemm)  # model state: another sampler of this model may have changed it
        run = lambda: self.model.sample_actions(static, noise=static_noise, num_steps=self.num_steps,
                                                denoise_attn=self.denoise_attn, prefix_attn=self.prefix_attn, **kw)
        from torch._inductor import config as inductor_config  # here: importing it costs serve.py 2 s on a CPU
        switch = (inductor_config.patch({'triton.enable_pdl': True}) if pdl_on(self.pdl, noise.device)
                  and guided is None else contextlib.nullcontext())  # guided steps: untested with PDL, left out
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), switch:  # pdl=False leaves inductor's own setting (TORCHINDUCTOR_ENABLE_PDL)
            for _ in range(2):  # warm-up (compilation, cuBLAS handles) outside the capture
                run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = run()
        return graph, static, static_noise, kw, out

    def __call__(self, batch, noise, guided=None):
        """guided: (guide, weights, max_guidance) of real-time chunking (a graph of its own per shape, the guidance's
        autograd pass inside it), or None."""
        key = tuple((k, tuple(v.shape)) for k, v in sorted(batch.items())) + (tuple(noise.shape), guided is None)
        if key not in self.graphs:
            self.graphs[key] = self.capture(batch, noise, guided)
        graph, static, static_noise, kw, out = self.graphs[key]
        for k, v in batch.items():
            static[k].copy_(v, non_blocking=True)
        static_noise.copy_(noise, non_blocking=True)
        if guided is not None:
            kw['guide'].copy_(guided[0], non_blocking=True)
            kw['guide_weights'].copy_(guided[1], non_blocking=True)
            kw['max_guidance'].fill_(float(guided[2]))
        graph.replay()
        return out.clone()


class Policy:
    """A checkpoint directory served: infer(observation) -> {'actions': (H, action dim) in the dataset's units}.
    weights: 'auto' (ema.safetensors if present, as openpi serves its EMA weights), 'ema', 'model', 'init' (fresh
    random weights, for comparisons). keys: {camera name | 'state' | 'prompt': observation key} overrides.
    fast (CUDA): calls replayed by a GraphedSampler, with its pdl (None: programmatic dependent launch where the GPU
    has it)."""

    def __init__(self, ckpt_dir, device='cpu', weights='auto', fast=False, noise_seed=None, keys=None, noise_scale=1.0,
                 pdl=None):
        ckpt_dir = checkpoint.find(ckpt_dir)  # a run directory serves its newest good checkpoint
        self.info, self.stats, self.tokenizer = info, _, _ = checkpoint.read_policy(ckpt_dir)
        self.ckpt_dir, self.device = ckpt_dir, torch.device(device)
        self.cfg = M.Pi05Config(**info['model'])
        if weights not in ('auto', 'ema', 'model', 'init'):
            raise ValueError(f"weights={weights!r}: expected 'auto', 'ema', 'model' or 'init'")
        has_ema = os.path.exists(os.path.join(ckpt_dir, 'ema.safetensors'))
        if weights == 'auto':
            weights = 'ema' if has_ema else 'model'
        if weights == 'ema' and not has_ema:
            raise ValueError(f"weights='ema': {ckpt_dir} has no ema.safetensors (its run had ema=False); "
                             f"use weights='model' or 'auto'")
        self.weights = weights
        cuda = self.device.type == 'cuda'
        init = None if weights == 'init' else os.path.join(ckpt_dir, f"{'ema' if weights == 'ema' else 'model'}.safetensors")
        if init is None:
            torch.manual_seed(0)  # 'init' weights are the same every time
        self.model = M.build(self.cfg, self.device, attn='sdpa', compute_dtype=torch.bfloat16 if cuda else torch.float32,
                             init_from=init)
        if cuda:  # bf16 weights for serving, except those openpi keeps in fp32 and computes in fp32
            self.model.set_param_dtype(torch.bfloat16, inference=True)
        self.model.eval().requires_grad_(False)
        self.keys = {c: f'observation/{c}' for c in info['cameras']}
        self.keys.update(state='observation/state', prompt='prompt')
        unknown = sorted(set(keys or {}) - set(self.keys))
        if unknown:
            raise ValueError(f"keys: this checkpoint reads no {' or '.join(map(repr, unknown))}; its names are "
                             f"{', '.join(self.keys)} (e.g. --keys=state=observation/joint_position)")
        self.keys.update(keys or {})
        if not (np.isfinite(noise_scale) and noise_scale >= 0):
            raise ValueError(f'noise_scale={noise_scale}: expected a finite number >= 0 (1: the noise sample_actions '
                             f'was trained from; 0: no noise)')
        self.noise_seed, self.noise_scale = noise_seed, float(noise_scale)
        self.cut_prompts = set()  # prompts too long for the model, warned about once each
        self.sampler = GraphedSampler(self.model, info['sample_steps'], pdl=pdl) if fast and cuda else None

    def metadata(self):
        i = self.info
        return dict(model_name=i['model_name'], action_horizon=self.cfg.action_horizon, action_dim=i['action_dim'],
                    state_dim=i['state_dim'], image_size=self.cfg.image_size, cameras=i['cameras'],
                    observation_keys=self.keys, prompt_format=i['prompt_format'],
                    checkpoint=os.path.abspath(self.ckpt_dir), weights=self.weights, sim=i.get('sim'),
                    noise_scale=self.noise_scale)

    def _image(self, obs, camera):
        key = self.keys[camera]
        if key not in obs:
            raise ObservationError(f"missing key {key!r} (camera {camera!r}); the request has {_key_list(obs)}")
        try:
            a = np.asarray(obs[key])
        except Exception:
            a = None
        if a is None or a.dtype.kind not in 'uif':
            raise ObservationError(f"{key}: expected an image array (H, W, 3), got {type(obs[key]).__name__}")
        if a.ndim == 3 and a.shape[0] == 3 and a.shape[-1] != 3:
            a = a.transpose(1, 2, 0)  # CHW, as LeRobot stores frames
        if a.ndim != 3 or a.shape[-1] != 3:
            raise ObservationError(f"{key}: expected an image (H, W, 3), got shape {a.shape}")
        smallest = max(8, self.cfg.image_size // 4)
        if min(a.shape[:2]) < smallest:
            raise ObservationError(f"{key}: image {a.shape[0]}x{a.shape[1]} is far below the model's "
                                   f"{self.cfg.image_size}x{self.cfg.image_size}: send frames of at least {smallest} px a side")
        if a.dtype != np.uint8:
            if a.dtype.kind != 'f':
                raise ObservationError(f"{key}: expected uint8 or float in [0, 1], got {a.dtype}")
            if not np.isfinite(a).all():
                raise ObservationError(f"{key}: the image has non-finite values")
            if a.min() < -1e-3 or a.max() > 1 + 1e-3:
                raise ObservationError(f"{key}: a float image must be in [0, 1], got values in [{a.min():.4g}, "
                                       f"{a.max():.4g}]: send uint8 for 0-255 pixels")
            a = (255 * a.clip(0, 1)).astype(np.uint8)  # openpi's LiberoInputs convention for float frames
        return data.resize_with_pad(np.ascontiguousarray(a), self.cfg.image_size).transpose(2, 0, 1)

    def _tokens(self, obs):
        i = self.info
        pkey = self.keys['prompt']
        if pkey not in obs:
            raise ObservationError(f"missing key {pkey!r} (the task instruction, a string); the request has {_key_list(obs)}")
        prompt = obs[pkey]
        if not isinstance(prompt, str):
            raise ObservationError(f"{pkey}: expected the task instruction as a string, got {type(prompt).__name__} "
                                   f"{_short(repr(prompt), 60)}")
        state = None
        if i['prompt_format'] == 'pi05':
            key = self.keys['state']
            if key not in obs:
                raise ObservationError(f"missing key {key!r} (the robot state, {i['state_dim']} values)")
            try:
                s = np.asarray(obs[key], np.float64).reshape(-1)
            except (TypeError, ValueError):
                raise ObservationError(f"{key}: expected {i['state_dim']} numbers, got {_short(repr(obs[key]), 60)}") from None
            if s.shape[0] != i['state_dim']:
                raise ObservationError(f"{key}: expected {i['state_dim']} state values, got {s.shape[0]}")
            if not np.isfinite(s).all() or np.abs(s).max(initial=0) > 1e6:
                raise ObservationError(f"{key}: state values must be finite and of sensible size, got {_short(s.tolist(), 120)}")
            s = s.astype(np.float32)
            st = self.stats['state']
            state = data.normalize(s, st['q01'], st['q99'])
        ids = data.encode_prompt(self.tokenizer, prompt, state)
        if len(ids) > self.cfg.max_token_len and prompt not in self.cut_prompts and len(self.cut_prompts) < 100:
            self.cut_prompts.add(prompt)  # cut below, as prepare.py cut training's; the first 100 such prompts warned
            print(f"warning: a prompt of {len(ids)} tokens{' with the state' if state is not None else ''} is cut to "
                  f"the model's {self.cfg.max_token_len} slots: {_short(repr(prompt), 80)}", file=sys.stderr, flush=True)
        ids = ids[:self.cfg.max_token_len]
        return ids, data.bucketed(len(ids), i['prompt_bucket'], self.cfg.max_token_len)  # the training buckets

    def prepare(self, observations, to_device=True):
        """A list of observation dicts -> the model's batch on the device (to_device=False: on the CPU), prompts
        padded to a common bucket."""
        images = np.stack([np.stack([self._image(o, c) for c in self.info['cameras']]) for o in observations])
        tokens = [self._tokens(o) for o in observations]
        L = max(n for _, n in tokens)
        ids, mask = np.zeros((len(tokens), L), np.int64), np.zeros((len(tokens), L), bool)
        for j, (t, _) in enumerate(tokens):
            ids[j, :len(t)], mask[j, :len(t)] = t, True
        batch = dict(images=torch.from_numpy(images), image_mask=torch.ones(images.shape[:2], dtype=torch.bool),
                     tokens=torch.from_numpy(ids), token_mask=torch.from_numpy(mask))
        return {k: v.to(self.device) for k, v in batch.items()} if to_device else batch

    def noise(self, batch):
        """The sampling noise for a prepared batch: (B, H, action_dim), on the CPU. noise_seed None: fresh every
        request, as openpi's and LeRobot's policies draw it. noise_seed s: row j from a generator seeded by s and a
        checksum of row j's images and prompt tokens (padding excluded): the same observation gets the same noise,
        on every device and whatever else is in the batch, so a run repeats exactly however requests interleave,
        and each new observation gets new noise (an observation repeated exactly gets the same actions again).
        Times noise_scale (1: the draw itself)."""
        shape = (self.cfg.action_horizon, self.cfg.action_dim)
        if self.noise_seed is None:
            return torch.randn(len(batch['images']), *shape) * self.noise_scale
        seed = zlib.crc32(str(self.noise_seed).encode())  # the CPU generator keeps 32 bits of its seed: one checksum
        rows = []
        for im, ids, m in zip(*(batch[k].cpu().numpy() for k in ('images', 'tokens', 'token_mask'))):
            crc = zlib.crc32(ids[m].tobytes(), zlib.crc32(im.tobytes(), seed))
            rows.append(torch.randn(shape, generator=torch.Generator().manual_seed(crc)))
        return torch.stack(rows) * self.noise_scale

    def _guide(self, observations):
        """Real-time chunking from the optional request keys 'prev_chunk' (the previous chunk's actions that overlap
        this one, in the dataset's units: prev_chunk[0] runs at the time of this chunk's action 0), 'delay' (how many
        of them run while this one is computed; default 0) and 'guidance' (the clip beta; default 5). -> (guide,
        weights, beta) for sample_actions, or None when no request carries a previous chunk."""
        if not any('prev_chunk' in o for o in observations):
            return None
        H, A, n = self.cfg.action_horizon, self.cfg.action_dim, self.info['action_dim']
        guide, weights = torch.zeros(len(observations), H, A), torch.zeros(len(observations), H, A)
        betas = set()
        for j, o in enumerate(observations):
            if 'prev_chunk' not in o:
                continue
            try:
                prev = np.asarray(o['prev_chunk'], np.float64)
                delay, beta = int(o.get('delay', 0)), float(o.get('guidance', 5.0))
            except (TypeError, ValueError):
                raise ObservationError(f"prev_chunk: expected (k, {n}) actions, an int delay and a number guidance, "
                                       f"got {_short(repr(o.get('delay')), 40)}, {_short(repr(o.get('guidance')), 40)}") from None
            if prev.ndim != 2 or prev.shape[1] != n:
                raise ObservationError(f"prev_chunk: expected (k, {n}) actions in the dataset's units, got shape {prev.shape}")
            if not np.isfinite(prev).all() or not 0 <= delay <= len(prev) <= H:
                raise ObservationError(f"prev_chunk: {len(prev)} finite actions (at most the horizon, {H}) and 0 <= "
                                       f"delay <= that, got delay {delay}")
            if not (np.isfinite(beta) and beta >= 0):
                raise ObservationError(f"guidance: expected a finite number >= 0, got {beta}")
            a = self.stats['actions']
            guide[j, :len(prev), :n] = torch.from_numpy(data.normalize(prev.astype(np.float32), a['q01'], a['q99']))
            varies = torch.from_numpy(np.asarray(a['q99']) - np.asarray(a['q01']) > 1e-4).float()  # constant dims: no pull
            weights[j, :, :n] = M.rtc_weights(H, len(prev), delay)[:, None] * varies
            betas.add(beta)
        if len(betas) > 1:
            raise ObservationError(f'one guidance value per batch, got {sorted(betas)}')
        beta = betas.pop()
        if beta == 0 or not weights.any():  # no pull at all: the plain path (and its CUDA graph), exactly
            return None
        return guide.to(self.device), weights.to(self.device), beta

    @torch.no_grad()
    def infer_batch(self, observations):
        t0 = time.perf_counter()
        host = self.prepare(observations, to_device=False)
        batch = {k: v.to(self.device) for k, v in host.items()}
        guided = self._guide(observations)
        B = len(observations)
        noise = self.noise(host).to(self.device)
        if self.sampler is not None:  # CUDA graphs, real-time chunking included (its own graph per shape)
            x = self.sampler(batch, noise, guided)
        else:
            kw = {} if guided is None else dict(zip(('guide', 'guide_weights', 'max_guidance'), guided))
            x = self.model.sample_actions(batch, noise=noise, num_steps=self.info['sample_steps'], **kw)
        a = self.stats['actions']
        actions = data.unnormalize(x.float().cpu().numpy(), a['q01'], a['q99'])[..., :self.info['action_dim']]
        ms = (time.perf_counter() - t0) * 1e3
        return [{'actions': actions[j].astype(np.float32), 'policy_timing': {'infer_ms': ms}} for j in range(B)]

    def infer(self, obs):
        return self.infer_batch([obs])[0]

# -----------------------------------------------------------------------------
# the websocket server and a client


class PolicyServer:
    """openpi's policy-server protocol over websockets: metadata on connect, msgpack requests and replies, a
    string reply for a failed request (and the connection stays open), `Authorization: Api-Key` checked when an
    api_key is set, GET /healthz answered. Each connection has its own thread; one lock serialises inference, so
    clients are served one request at a time and every reply goes to the connection that asked."""

    def __init__(self, policy, host='127.0.0.1', port=8000, api_key='', max_request_mb=16):
        self.policy, self.host, self.requested_port, self.api_key = policy, host, port, api_key
        self.max_size = int(max_request_mb * 2 ** 20)
        self.lock, self.server, self.thread = threading.Lock(), None, None

    def _process_request(self, connection, request):
        if request.path == '/healthz':
            return connection.respond(HTTPStatus.OK, 'OK\n')
        if self.api_key:
            sent = request.headers.get('Authorization', '')
            if not hmac.compare_digest(sent.encode(), f'Api-Key {self.api_key}'.encode()):
                return connection.respond(HTTPStatus.UNAUTHORIZED, 'missing or wrong api key\n')
        return None

    def _handle(self, connection):
        from websockets.exceptions import ConnectionClosed
        try:
            connection.send(packb(self.policy.metadata()))
            prev_total = None
            for message in connection:
                t0 = time.monotonic()
                try:
                    if isinstance(message, str):
                        raise ObservationError('expected a binary msgpack frame, got text')
                    obs = unpackb(message)
                    if not isinstance(obs, dict):
                        raise ObservationError(f'expected an observation dict, got {type(obs).__name__}')
                    if '__ctrl__' in obs:  # newer openpi clients announce episodes; nothing to do here
                        connection.send(packb({'__ack__': obs['__ctrl__']}))
                        continue
                    with self.lock:
                        t1 = time.monotonic()
                        reply = self.policy.infer(obs)
                        infer_ms = (time.monotonic() - t1) * 1e3
                    reply['server_timing'] = {'infer_ms': infer_ms, **({'prev_total_ms': prev_total} if prev_total else {})}
                    connection.send(packb(reply))
                except ConnectionClosed:
                    raise
                except ObservationError as err:
                    connection.send(f'bad request: {err}')
                except Exception as err:  # report what failed, keep serving; the traceback stays in the server's log
                    traceback.print_exc()
                    connection.send(f'server error: {type(err).__name__}: {_short(err)}')
                prev_total = (time.monotonic() - t0) * 1e3
        except ConnectionClosed:
            pass

    def start(self):
        """Listen in a background thread; returns self (self.port is the port bound, also when 0 was asked)."""
        from websockets.sync.server import serve
        self.server = serve(self._handle, self.host, self.requested_port, compression=None, max_size=self.max_size,
                            process_request=self._process_request)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server is not None:
            self.server.shutdown()
            self.thread.join()
            self.server = None


class Client:
    """The client side of the protocol (the same messages as openpi_client.WebsocketClientPolicy)."""

    def __init__(self, host='127.0.0.1', port=8000, api_key=None):
        from websockets.sync.client import connect
        headers = {'Authorization': f'Api-Key {api_key}'} if api_key else None
        self.ws = connect(host if host.startswith('ws') else f'ws://{host}:{port}', compression=None, max_size=None,
                          additional_headers=headers)
        self.metadata = unpackb(self.ws.recv())

    def infer(self, obs):
        self.ws.send(packb(obs))
        reply = self.ws.recv()
        if isinstance(reply, str):
            raise RuntimeError(f'policy server: {reply}')
        return unpackb(reply)

    def close(self):
        self.ws.close()


if __name__ == '__main__':
    exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'configurator.py')).read())
    if not ckpt:
        raise SystemExit('serve.py: pass --ckpt=<a checkpoint directory written by train.py, or its run directory, e.g. out/demo>')
    if not 0 <= port <= 65535:
        raise SystemExit(f'serve.py: port={port}: expected 0..65535 (0: any free port)')
    try:
        dev = M.resolve_device(device)
    except ValueError as err:
        raise SystemExit(f'serve.py: {err}') from None
    pairs = [kv.split('=', 1) for kv in keys.split(',')] if keys else []
    if any(len(p) != 2 or not all(p) for p in pairs):
        raise SystemExit(f"serve.py: keys={keys!r}: expected name=observation_key pairs separated by commas, "
                         f"e.g. --keys=image=observation/exterior_image_1_left,state=observation/joint_position")
    overrides = dict(pairs)
    t0 = time.perf_counter()
    try:
        policy = Policy(ckpt, dev, weights, fast=fast, noise_seed=noise_seed if noise_seed >= 0 else None, keys=overrides,
                        noise_scale=noise_scale, pdl=None if pdl else False)
    except (FileNotFoundError, ValueError, M.CheckpointError, data.DataError) as err:
        raise SystemExit(f'serve.py: {err}')
    print(f"loaded {ckpt} ({policy.weights} weights) on {dev} in {time.perf_counter() - t0:.1f} s; "
          f"observation keys {policy.keys}")
    try:
        server = PolicyServer(policy, host, port, api_key, max_request_mb).start()
    except OSError as err:  # e.g. the port is taken
        raise SystemExit(f'serve.py: cannot listen on {host}:{port} ({err.strerror or err}): choose another --port= '
                         f'(or --host=)')
    print(f"serving on ws://{host}:{server.port}" + (' (api key required)' if api_key else ''), flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.stop()
