"""
Data for Pi0.5 training: the prepared format and its checks, prompts and tokenizers, normalization, augmentation and
the loader. prepare.py writes a LeRobot dataset in this format, sim.py the synthetic task's demonstrations.

Prepared format (one directory; every array is a .npy file opened with mmap_mode='r'):
    meta.json            cameras (slot order), wrist flags, image_size, num_frames, num_episodes, state_dim,
                         action_dim (native), fps, tasks, max_token_len, vocab_size, ...
    stats.json           {"norm_stats": {"state"|"actions": {"mean", "std", "q01", "q99"}}}, openpi's layout
    images_{c}.npy       uint8 (num_frames, 3, S, S) per camera c (index into meta cameras), after resize_with_pad
    state.npy            float32 (num_frames, state_dim)
    actions.npy          float32 (num_frames, action_dim)
    episode_starts.npy   int64 (num_episodes + 1,) frame offsets, episode e is [starts[e], starts[e+1])
    task_index.npy       int32 (num_frames,) index into meta tasks
    tokens_pi05.npy      int32 (num_frames, max_token_len) "Task: ..., State: ...;\\nAction: " prompt, 0-padded
    tokens_pi05_len.npy  int32 (num_frames,)
    tokens_pi0.npy       int32 (num_tasks, max_token_len) "<bos>{task}" + "\\n" prompt, 0-padded
    tokens_pi0_len.npy   int32 (num_tasks,)

Prompts are tokenized at preparation time so training never needs sentencepiece (serving a checkpoint with a
SentencePiece tokenizer does). The pi05 prompt holds the
discretized normalized state, so it is stored per frame; the pi0-style prompt (what pi05_libero uses) per task.

Training side (train.py): the loader yields this rank's micro-batches of a step, prompt padding already cut on its
prefetch thread (trim_batch), and the wrist flags of its camera slots come from meta.json:

    loader = Loader(data_dir, "train", micro_batch, grad_accum, rank, world_size, seed, horizon, prompt_bucket=32)
    for mb in next(loader):                                  # grad_accum dicts of (pinned) CPU tensors
        images = augment_images(mb["images"].cuda(), loader.wrist, params)   # params: sample_augment_params

pi05_libero uses prompt_format="pi0" (openpi sets discrete_state_input=False there); "pi05" puts the state in the
prompt. Tests: python -m pytest -q test_data.py

Dependencies: torch, numpy, tqdm (pillow for resize_with_pad, sentencepiece for load_tokenizer).
"""

import json
import os
import queue
import re
import threading
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

# -----------------------------------------------------------------------------
# prompts (openpi src/openpi/models/tokenizer.py, PaligemmaTokenizer.tokenize)

def clean_text(text):
    return text.strip().replace("_", " ").replace("\n", " ")

def discretize_state(x):
    # 256 bins over [-1, 1]; values below -1 give -1 because quantile normalization does not clip
    return np.digitize(x, np.linspace(-1, 1, 256 + 1)[:-1]) - 1

def format_prompt(task, state=None):
    """pi05 prompt string when a normalized, un-padded state is given, else the cleaned task."""
    text = clean_text(task)
    if state is None:
        return text
    state_str = " ".join(str(int(s)) for s in discretize_state(np.asarray(state)))
    return f"Task: {text}, State: {state_str};\nAction: "

def encode_prompt(tokenizer, task, state=None):
    """token ids, unpadded and untruncated. tokenizer needs encode(text, add_bos=bool) -> list of ints."""
    if state is None:  # pi0-style: the newline is tokenized on its own
        return list(tokenizer.encode(format_prompt(task), add_bos=True)) + list(tokenizer.encode("\n", add_bos=False))
    return list(tokenizer.encode(format_prompt(task, state), add_bos=True))

class WordTokenizer:
    """tiny word-level tokenizer for the synthetic data: pad 0, eos 1, bos 2 (the Gemma ids), unk 3."""
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]

    def __init__(self, words):
        self.vocab = self.specials + sorted(set(words))
        self.ids = {w: i for i, w in enumerate(self.vocab)}

    @staticmethod
    def split(text):
        return re.findall(r"\n|-?\d+|[A-Za-z]+|[^\sA-Za-z\d]", text)

    def encode(self, text, add_bos=False):
        return [2] * add_bos + [self.ids.get(w, 3) for w in self.split(text)]

    def decode(self, ids):
        return " ".join(self.vocab[i] for i in ids if i > 2)

def word_tokenizer(tasks):
    """a WordTokenizer for these task strings in both prompt formats (for models trained from scratch)."""
    words = ["Task", "State", "Action", ":", ",", ";", "\n"] + [str(i) for i in range(-1, 256)]
    return WordTokenizer(words + [w for t in tasks for w in WordTokenizer.split(clean_text(t))])

def load_tokenizer(path):
    try:
        import sentencepiece
    except ImportError:
        raise ImportError("tokenizing prompts needs sentencepiece: pip install sentencepiece") from None
    try:
        return sentencepiece.SentencePieceProcessor(model_file=str(path))
    except (OSError, RuntimeError) as err:
        first_line = str(err).partition("\n")[0][:120]
        raise DataError(f"{path}: not a readable SentencePiece model ({first_line})") from None

# -----------------------------------------------------------------------------
# normalization (openpi src/openpi/transforms.py Normalize/Unnormalize with use_quantiles=True)

def _like(q, x):
    return torch.as_tensor(q, dtype=x.dtype, device=x.device) if torch.is_tensor(x) else np.asarray(q, np.float32)

def normalize(x, q01, q99):
    q01, q99 = _like(q01, x), _like(q99, x)
    return (x - q01) / (q99 - q01 + 1e-6) * 2.0 - 1.0

def unnormalize(x, q01, q99):
    """inverse of normalize on the first len(q01) dims; the remaining (padding) dims pass through."""
    q01, q99 = _like(q01, x), _like(q99, x)
    n = q01.shape[-1]
    head = (x[..., :n] + 1.0) / 2.0 * (q99 - q01 + 1e-6) + q01
    cat = torch.cat if torch.is_tensor(x) else np.concatenate
    return cat([head, x[..., n:]], -1)

def pad_to_dim(x, dim=32):
    """zero-pad the last axis to dim (openpi PadStatesAndActions, model action_dim = 32)."""
    n = x.shape[-1]
    assert n <= dim, f"cannot pad {n} dims down to {dim}"
    if torch.is_tensor(x):
        return F.pad(x, (0, dim - n))
    return np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, dim - n)])

def compute_stats(x):
    # exact quantiles over every frame (openpi approximates them with 5000-bin histograms,
    # scripts/compute_norm_stats.py); actions are per frame, not per chunk as openpi flattens them
    x = np.asarray(x, np.float64)
    return {"mean": x.mean(0).tolist(), "std": x.std(0).tolist(),
            "q01": np.quantile(x, 0.01, axis=0).tolist(), "q99": np.quantile(x, 0.99, axis=0).tolist()}

def load_stats(data_dir):
    """{'state'|'actions': {'mean','std','q01','q99': float32 arrays}} from a prepared directory's stats.json or a
    stats file; accepts openpi's norm_stats.json too."""
    path = os.path.join(data_dir, "stats.json") if os.path.isdir(data_dir) else data_dir
    try:
        with open(path) as f:
            stats = json.load(f)
        stats = stats.get("norm_stats", stats)
        out = {k: {s: np.asarray(v, np.float32) for s, v in d.items()} for k, d in stats.items()}
        for k in ("state", "actions"):
            if k in out and not {"q01", "q99"} <= set(out[k]):
                raise KeyError(f"{k!r} has no q01/q99")
    except FileNotFoundError:
        raise DataError(f"{path} not found") from None
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise DataError(f"{path} is not a valid stats file ({type(err).__name__}: {err}); expected "
                        f'{{"norm_stats": {{"state": {{"q01": [...], "q99": [...]}}, "actions": ...}}}}') from None
    return out

# -----------------------------------------------------------------------------
# images

def resize_with_pad(img, size):
    """HWC uint8 -> size x size: longer side scaled to size, PIL bilinear, centred on black
    (openpi_client image_tools.resize_with_pad)."""
    from PIL import Image
    h, w = img.shape[:2]
    if (h, w) == (size, size):
        return img
    ratio = max(w / size, h / size)
    nh, nw = int(h / ratio), int(w / ratio)
    small = Image.fromarray(img).resize((nw, nh), resample=Image.BILINEAR)
    canvas = Image.new(small.mode, (size, size), 0)
    canvas.paste(small, ((size - nw) // 2, (size - nh) // 2))
    return np.asarray(canvas)

def sample_augment_params(n, n_cams, generator=None, device="cpu", kind="openpi"):
    """independent augmentation parameters per example and camera, each (n, n_cams[, 2]).
    draw them for the whole global batch from one seeded generator and index by sample_id, so every
    data-parallel layout sees the same augmentation. kind: 'openpi' (crop, rotation, colour) or 'shift' (the random
    shift of DrQ, Kostrikov et al. 2020: each image moved by up to SHIFT of its side, edges repeated, nothing else)."""
    gdev = generator.device if generator is not None else "cpu"
    u = lambda *shape: torch.rand(*shape, generator=generator, device=gdev)
    if kind not in ("openpi", "shift"):
        raise ValueError(f"augmentation kind={kind!r}: expected 'openpi' or 'shift'")
    if kind == "shift":
        return {"shift": u(n, n_cams, 2).to(device)}  # uniform in [0, 1): one of the 2 pad + 1 offsets at use
    p = {
        "crop_frac": torch.full((n, n_cams), 0.95, device=gdev),  # openpi models/model.py: RandomCrop(0.95 W, 0.95 H)
        "crop_xy": u(n, n_cams, 2),                  # crop offset as a fraction of the free margin
        "angle": (u(n, n_cams) * 2 - 1) * 5.0,       # degrees, augmax Rotate((-5, 5))
        "brightness": 1 + (u(n, n_cams) * 2 - 1) * 0.3,  # ColorJitter(brightness=0.3, contrast=0.4, saturation=0.5)
        "contrast": 1 + (u(n, n_cams) * 2 - 1) * 0.4,
        "saturation": 1 + (u(n, n_cams) * 2 - 1) * 0.5,
    }
    return {k: v.to(device) for k, v in p.items()}

SHIFT = 1 / 32  # the largest shift of 'shift' augmentation, as a fraction of the image side (4 px at 128)

def shift_images(x, shift):
    """x float (B, N, C, S, S); shift (B, N, 2) in [0, 1): each image padded by pad = max(1, S * SHIFT) pixels with
    its edge pixels repeated and cropped back to S at offset floor(shift * (2 pad + 1)) in x and y, so every move in
    -pad..pad is equally likely."""
    B, N, C, S, _ = x.shape
    pad = max(1, round(S * SHIFT))
    xp = F.pad(x.reshape(B * N, C, S, S), (pad, pad, pad, pad), mode="replicate")
    off = torch.floor(shift.to(x.device).reshape(B * N, 2) * (2 * pad + 1)).long().clamp(max=2 * pad)  # (dx, dy)
    ar = torch.arange(S, device=x.device)
    rows, cols = off[:, 1, None] + ar, off[:, 0, None] + ar                            # (BN, S) each
    out = xp[torch.arange(B * N, device=x.device)[:, None, None], :, rows[:, :, None], cols[:, None, :]]
    return out.permute(0, 3, 1, 2).reshape(B, N, C, S, S)                             # (BN, S, S, C) -> images

def augment_images(images, wrist, params):
    """training augmentation of openpi (models/model.py preprocess_observation, augmax), batched; or, when params
    come from sample_augment_params(kind='shift'), the random shift alone on every camera (shift_images).
    images: uint8 (B, N, 3, S, S) or float in [-1, 1]; wrist: N bools; params from sample_augment_params,
    already sliced to these B examples. returns float32 in [-1, 1].
    non-wrist cameras: crop crop_frac of the side -> resize back to S -> rotate, fused into one bilinear affine
    warp. all cameras: brightness, contrast, saturation as openpi's PyTorch port does (preprocessing_pytorch.py):
    always applied and no hue jitter. augmax's ColorJitter would apply it with p=0.5 and also jitter hue (0.1) in
    HSV space; we drop both to keep the op simple and identical to the PyTorch reference."""
    x = images.float() / 255.0 if images.dtype == torch.uint8 else (images.float() + 1.0) / 2.0
    if "shift" in params:
        return shift_images(x, params["shift"]) * 2.0 - 1.0
    B, N, C, S, _ = x.shape
    geo = [i for i in range(N) if not wrist[i]]
    if geo:
        g = len(geo)
        # evenly spaced cameras (any one or two, and the usual layouts) as a slice: indexing a GPU tensor with a
        # list copies the list to the GPU from pageable memory, and each such copy makes the host wait for the GPU
        step = geo[1] - geo[0] if g > 1 else 1
        geo = slice(geo[0], geo[-1] + 1, step) if geo == list(range(geo[0], geo[-1] + 1, step)) else geo
        xs = x[:, geo].reshape(B * g, C, S, S)
        crop = torch.floor(params["crop_frac"][:, geo].reshape(-1) * S + 1e-4)  # int(0.95 * S) pixels
        off = torch.floor(params["crop_xy"][:, geo].reshape(-1, 2) * (S - crop[:, None] + 1))
        off = torch.minimum(off, S - crop[:, None])  # integer top-left corner, uniform in [0, S - crop]
        scale = crop / S
        shift = (2 * off + crop[:, None] - S) / S    # crop centre in normalized coords
        a = torch.deg2rad(params["angle"][:, geo].reshape(-1).float())
        cos, sin = torch.cos(a), torch.sin(a)
        # output coords -> un-rotate -> resized-crop coords -> input coords, in align_corners=False units;
        # a positive angle turns the picture counter-clockwise as displayed (PIL's convention)
        theta = torch.stack([torch.stack([scale * cos, -scale * sin, shift[:, 0]], -1),
                             torch.stack([scale * sin, scale * cos, shift[:, 1]], -1)], 1)
        grid = F.affine_grid(theta.to(xs.dtype), (B * g, C, S, S), align_corners=False)
        out = F.grid_sample(xs, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        # corners rotated in from outside the crop stay black, as rotating the resized crop would leave them
        inside = (((grid - shift[:, None, None]) / scale[:, None, None, None]).abs() <= 1 + 1e-4).all(-1)
        out = out * inside[:, None]
        x = x.clone()
        x[:, geo] = out.view(B, g, C, S, S)
    f = lambda k: params[k].to(x.dtype)[..., None, None, None]
    x = (x * f("brightness")).clamp(0, 1)
    mean = x.mean(dim=(-3, -2, -1), keepdim=True)
    x = ((x - mean) * f("contrast") + mean).clamp(0, 1)
    gray = x.mean(dim=-3, keepdim=True)
    x = ((x - gray) * f("saturation") + gray).clamp(0, 1)
    return x * 2.0 - 1.0

# -----------------------------------------------------------------------------
# the prepared format: meta.json rules, writing it

class DataError(ValueError):
    """a problem with a source dataset or a prepared directory; the message names the file, key or value and says
    what to do about it."""

def is_wrist(camera):
    """the naming rule for wrist cameras (no geometric augmentation, openpi models/model.py): 'wrist' in the
    name. decided once, at preparation (overridable with --wrist=), and kept in meta.json's 'wrist' list;
    everything later reads that list."""
    return "wrist" in camera.lower()

def write_prepared(out, meta, state, actions, episode_starts, task_index, tasks, tokenizer, max_token_len, stats=None):
    """write low-dim arrays, stats, both token tables and meta.json (last, so its presence means complete).
    stats: a stats.json / openpi norm_stats.json to use instead of computing them from this data."""
    n_frames = len(state)
    np.save(os.path.join(out, "state.npy"), state.astype(np.float32))
    np.save(os.path.join(out, "actions.npy"), actions.astype(np.float32))
    np.save(os.path.join(out, "episode_starts.npy"), np.asarray(episode_starts, np.int64))
    np.save(os.path.join(out, "task_index.npy"), np.asarray(task_index, np.int32))
    if stats is None:
        stats, how = {"state": compute_stats(state), "actions": compute_stats(actions)}, "exact np.quantile over all frames"
    else:
        how = f"from {os.path.abspath(stats)}"
        stats = {k: {s: v.tolist() for s, v in d.items()} for k, d in load_stats(stats).items() if k in ("state", "actions")}
        for k, x in (("state", state), ("actions", actions)):
            if k not in stats or len(stats[k]["q01"]) != x.shape[1]:
                raise DataError(f"given stats for {k!r} do not match the data's {x.shape[1]} dims")
    with open(os.path.join(out, "stats.json"), "w") as f:
        json.dump({"norm_stats": stats}, f, indent=1)
    L = max_token_len
    def put(tok, lens, i, ids):  # -> whether the prompt was cut
        tok[i, :min(len(ids), L)] = ids[:L]
        lens[i] = min(len(ids), L)
        return len(ids) > L
    tok0, len0 = np.zeros((len(tasks), L), np.int32), np.zeros(len(tasks), np.int32)
    cut0 = sum(put(tok0, len0, t, encode_prompt(tokenizer, task)) for t, task in enumerate(tasks))
    # pi05 prompts carry the normalized, un-padded state (tokenization runs before padding in openpi)
    nstate = normalize(state.astype(np.float32), stats["state"]["q01"], stats["state"]["q99"])
    tok05 = np.lib.format.open_memmap(os.path.join(out, "tokens_pi05.npy"), "w+", np.int32, (n_frames, L))
    len05 = np.zeros(n_frames, np.int32)
    cut05 = sum(put(tok05, len05, i, encode_prompt(tokenizer, tasks[task_index[i]], nstate[i]))
                for i in tqdm(range(n_frames), desc="tokenize", unit="frame", disable=n_frames < 10000, mininterval=1))
    tok05.flush()
    del tok05
    np.save(os.path.join(out, "tokens_pi0.npy"), tok0)
    np.save(os.path.join(out, "tokens_pi0_len.npy"), len0)
    np.save(os.path.join(out, "tokens_pi05_len.npy"), len05)
    print(f"prompts: {cut0} of {len(tasks)} task prompts (pi0 format) and {cut05} of {n_frames} frame prompts (pi05 format, "
          f"with the state) cut to max_token_len={L}" + ("; prepare with a larger --max_token_len to keep them whole"
                                                        if cut0 or cut05 else ""))
    meta.update(num_frames=n_frames, num_episodes=len(episode_starts) - 1, state_dim=state.shape[1],
                action_dim=actions.shape[1], tasks=list(tasks), max_token_len=L,
                max_prompt_len_pi05=int(len05.max(initial=0)), max_prompt_len_pi0=int(len0.max(initial=0)),
                cut_prompts_pi05=int(cut05), cut_prompts_pi0=int(cut0), stats=how)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta

# -----------------------------------------------------------------------------
# loader

def bucketed(n, bucket, slots):
    """n prompt tokens rounded up to a multiple of bucket, at most slots (bucket 0: all slots): the few prompt
    lengths compiled code and CUDA graphs see."""
    return min(slots, -(-n // bucket) * bucket) if bucket else slots

def trim_batch(batch, bucket=32, cameras=True):
    """Shape decisions made on the CPU before the batch reaches the GPU, so the step never waits on the host:
    camera slots masked in every sample are dropped (cameras=True), and prompt slots that are padding in every
    sample are cut, keeping a multiple of `bucket` slots so compiled code sees few shapes (bucket 0: keep all).
    The loss is unchanged: dropped tokens are invisible to every valid token and never advance positions
    (test_equivalence.py). Returns (trimmed batch, indices of the camera slots kept)."""
    batch = dict(batch)
    n_slots = batch["image_mask"].shape[1]
    kept = batch["image_mask"].any(0).nonzero()[:, 0].tolist() if cameras else list(range(n_slots))
    if len(kept) < n_slots:
        batch["images"], batch["image_mask"] = batch["images"][:, kept], batch["image_mask"][:, kept]
    if bucket:
        L = batch["token_mask"].shape[1]
        used = batch["token_mask"].any(0).nonzero()
        n = bucketed(int(used.max()) + 1 if len(used) else 1, bucket, L)
        batch["tokens"], batch["token_mask"] = batch["tokens"][:, :n], batch["token_mask"][:, :n]
    return batch, kept

def random_batch(cfg, B, cameras=2, empty_slots=0, prompt_lengths=None, prompt_slots=None, generator=None,
                 device="cpu"):
    """a batch of random content shaped like LIBERO's, for benchmarks and tests. cfg: a model config (image_size,
    vocab, max_token_len, action_horizon, action_dim). `cameras` real camera slots, then `empty_slots` masked in
    every sample (openpi pads LIBERO's two cameras to three); prompts padded to prompt_slots (default
    cfg.max_token_len), their lengths drawn from prompt_lengths (default prompt_slots/2 ... prompt_slots), the first
    sample's always the longest so trimming gives the same shape for every batch; actions N(0, 1)."""
    g = dict(generator=generator, device=device)
    L = prompt_slots or cfg.max_token_len
    choices = torch.tensor(prompt_lengths or range(L // 2, L + 1), device=device)
    lens = choices[torch.randint(len(choices), (B,), **g)]
    lens[0] = choices.max()
    n, S = cameras + empty_slots, cfg.image_size
    mask = (torch.arange(n, device=device) < cameras).expand(B, n).clone()
    token_mask = torch.arange(L, device=device) < lens[:, None]
    return dict(images=torch.randint(0, 256, (B, n, 3, S, S), dtype=torch.uint8, **g) * mask[:, :, None, None, None],
                image_mask=mask, tokens=torch.randint(1, cfg.vocab, (B, L), **g) * token_mask, token_mask=token_mask,
                actions=torch.randn(B, cfg.action_horizon, cfg.action_dim, **g),
                sample_id=torch.arange(B, device=device))

def split_episodes(num_episodes, val_fraction=0.05):
    """(train, val) episode positions: round(val_fraction * E) held out, at least 1 when val_fraction > 0, evenly
    spaced, so every part of the dataset (LIBERO is ordered by suite) is represented; independent of the seed."""
    E = num_episodes
    n = int(round(val_fraction * E))
    n = max(1, n) if val_fraction > 0 and E > 1 else n
    val = np.floor((np.arange(n) + 0.5) * E / max(n, 1)).astype(np.int64)
    train = np.setdiff1d(np.arange(E), val)
    return train, val

def _prepare_hint(data_dir, meta=None):
    src = (meta or {}).get("source")
    if src == "synthetic":  # the same scenes again: their size, object count and seed are in meta.json
        return (f"python sim.py synthetic --out={data_dir} --image_size={meta.get('image_size', 64)} "
                f"--objects={meta.get('sim', {}).get('objects', 3)} --seed={meta.get('seed', 0)} "
                f"--episodes={meta.get('num_episodes', 2000)} --max_token_len={meta.get('max_token_len', 32)}")
    return f"python prepare.py --src={src or '<LeRobot dataset>'} --out={data_dir} --tokenizer=<tokenizer.model>"

def _check_npy(path, dtype, shape, hint):
    """a .npy file with this dtype and shape, whole (its size is the header's plus the data's)."""
    if not os.path.exists(path):
        raise DataError(f"{path} is missing; prepare the directory again: {hint}")
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            got_shape, _, got_dtype = read(f)
            offset = f.tell()
    except Exception as err:
        raise DataError(f"{path} is not a readable .npy file ({err}); prepare the directory again: {hint}") from None
    if got_dtype != np.dtype(dtype) or tuple(got_shape) != tuple(shape):
        raise DataError(f"{path} holds {got_dtype} {tuple(got_shape)} where meta.json implies {np.dtype(dtype)} "
                        f"{tuple(shape)}; prepare the directory again: {hint}")
    size, want = os.path.getsize(path), offset + int(np.prod(shape)) * np.dtype(dtype).itemsize
    if size != want:
        raise DataError(f"{path} is {size} bytes where its header implies {want} (truncated or overwritten); "
                        f"prepare the directory again: {hint}")

def check_prepared(data_dir):
    """meta.json of a prepared directory, after checking that every array is there, whole, with the dtype and shape
    meta.json implies, and that stats.json parses. Raises a DataError naming the file and the fix. Takes
    milliseconds: only headers and sizes are read."""
    meta_path = os.path.join(data_dir, "meta.json")
    if not os.path.isdir(data_dir):
        raise DataError(f"data_dir {data_dir!r} does not exist: prepare a dataset first ({_prepare_hint(data_dir)}), "
                        f"or pass another --data_dir")
    if not os.path.exists(meta_path):
        raise DataError(f"{meta_path} not found: {data_dir} is not a prepared dataset, or its preparation did not "
                        f"finish; prepare it: {_prepare_hint(data_dir)}")
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        n_frames, E, L, S = meta["num_frames"], meta["num_episodes"], meta["max_token_len"], meta["image_size"]
        T, cams, ds, da = len(meta["tasks"]), meta["cameras"], meta["state_dim"], meta["action_dim"]
    except (ValueError, KeyError, TypeError) as err:
        raise DataError(f"{meta_path} is damaged ({type(err).__name__}: {err}); prepare the directory again: "
                        f"{_prepare_hint(data_dir)}") from None
    hint = _prepare_hint(data_dir, meta)
    arrays = {f"images_{c}.npy": (np.uint8, (n_frames, 3, S, S)) for c in range(len(cams))}
    arrays.update({"state.npy": (np.float32, (n_frames, ds)), "actions.npy": (np.float32, (n_frames, da)),
                   "episode_starts.npy": (np.int64, (E + 1,)), "task_index.npy": (np.int32, (n_frames,)),
                   "tokens_pi05.npy": (np.int32, (n_frames, L)), "tokens_pi05_len.npy": (np.int32, (n_frames,)),
                   "tokens_pi0.npy": (np.int32, (T, L)), "tokens_pi0_len.npy": (np.int32, (T,))})
    for name, (dtype, shape) in arrays.items():
        _check_npy(os.path.join(data_dir, name), dtype, shape, hint)
    stats = load_stats(data_dir)
    for k, dim in (("state", ds), ("actions", da)):
        if k not in stats or len(stats[k]["q01"]) != dim:
            raise DataError(f"{os.path.join(data_dir, 'stats.json')}: no {k!r} statistics for its {dim} dims; "
                            f"prepare the directory again: {hint}")
    return meta

def check_against_model(meta, cfg, prompt_format, data_dir="data_dir"):
    """Problems (one line each, naming the value and the fix) with training a model of config cfg on a prepared
    directory, found before the model is built; empty when there are none."""
    problems, name = [], f"{data_dir}/meta.json"
    if meta.get("vocab_size", 0) > cfg.vocab:
        problems.append(f"{name}: the tokenizer ({meta.get('tokenizer')}) has {meta['vocab_size']} tokens, more than the "
                        f"model's embedding ({cfg.vocab}): prepare with the model's tokenizer (PaliGemma: 257152 tokens)")
    if meta["image_size"] != cfg.image_size:
        problems.append(f"{name}: images are {meta['image_size']}x{meta['image_size']}, the model takes "
                        f"{cfg.image_size}x{cfg.image_size}: prepare with --image_size={cfg.image_size}")
    if len(meta["cameras"]) > cfg.camera_slots:
        problems.append(f"{name}: {len(meta['cameras'])} cameras {meta['cameras']}, the model has {cfg.camera_slots} "
                        f"camera slots: prepare with --cameras= naming at most {cfg.camera_slots}")
    for what in ("action", "state"):
        if meta[f"{what}_dim"] > cfg.action_dim:
            problems.append(f"{name}: {what}s have {meta[f'{what}_dim']} dims, the model takes at most {cfg.action_dim}")
    longest = meta.get(f"max_prompt_len_{prompt_format}", 0)
    if longest > cfg.max_token_len:
        problems.append(f"{name}: {prompt_format} prompts of up to {longest} tokens, the model has "
                        f"{cfg.max_token_len} prompt slots: set --max_token_len={longest}")
    return problems

class Loader:
    """deterministic batches as a pure function of (seed, step), sharded over ranks, prefetched by a thread.

    sample order: the train frames form an endless stream, epoch after epoch, each epoch a permutation drawn from
    np.random.default_rng([seed, epoch]). step s takes stream positions [s*G, (s+1)*G), G = micro_batch *
    grad_accum * world_size, so a step may straddle two epochs (the tail of one permutation and the head of the
    next): nothing is dropped and every frame appears once per epoch. position j of the step is its sample_id;
    rank r, micro-step m gets sample_ids [(r*grad_accum + m)*B, +B). the checkpointed position is just the step.

    next() returns grad_accum micro-batch dicts of CPU tensors (pinned when pin_memory and CUDA):
      images uint8 (B, n_cams, 3, S, S), image_mask bool (B, n_cams) (all True), tokens int64 (B, L), token_mask bool (B, L),
      state float32 (B, action_dim) normalized and zero-padded, actions float32 (B, H, action_dim) normalized and
      zero-padded, action_mask bool (B, H) (False past the episode end, where the last action repeats as LeRobot
      clamps), sample_id int64 (B,).
    """

    def __init__(self, data_dir, split="train", micro_batch=32, grad_accum=1, rank=0, world_size=1, seed=0,
                 horizon=10, action_dim=32, prompt_format="pi05", val_fraction=0.05, prefetch=2, pin_memory=True,
                 start_step=0, token_len=None, prompt_bucket=0):
        assert prompt_format in ("pi05", "pi0"), prompt_format
        assert 0 <= rank < world_size, (rank, world_size)
        with open(os.path.join(data_dir, "meta.json")) as f:
            self.meta = meta = json.load(f)
        self.stats = load_stats(data_dir)
        load = lambda name: np.load(os.path.join(data_dir, name), mmap_mode="r")
        self.images = [load(f"images_{c}.npy") for c in range(len(meta["cameras"]))]
        self.state, self.actions = load("state.npy"), load("actions.npy")
        self.task_index = load("task_index.npy")
        starts = np.load(os.path.join(data_dir, "episode_starts.npy"))
        if prompt_format == "pi05":
            self.tokens, self.token_lens = load("tokens_pi05.npy"), np.load(os.path.join(data_dir, "tokens_pi05_len.npy"))
        else:
            self.tokens, self.token_lens = load("tokens_pi0.npy"), np.load(os.path.join(data_dir, "tokens_pi0_len.npy"))
        self.wrist = list(meta["wrist"])
        assert action_dim >= meta["action_dim"] and action_dim >= meta["state_dim"], "action_dim below native dims"
        self.token_len = token_len or meta["max_token_len"]
        longest = int(self.token_lens.max(initial=0))
        if self.token_len < longest:
            warnings.warn(f"token_len={self.token_len} cuts prompts of up to {longest} tokens")
        lengths = np.diff(starts)
        self.ep_end = np.repeat(starts[1:], lengths)  # per frame: one past its episode's last frame
        train, val = split_episodes(len(lengths), val_fraction)
        eps = {"train": train, "val": val, "all": np.arange(len(lengths))}[split]
        self.frames = np.concatenate([np.arange(starts[e], starts[e + 1]) for e in eps]) if len(eps) else np.zeros(0, np.int64)
        assert len(self.frames), f"split {split!r} has no frames"
        self.episodes = eps
        self.B, self.grad_accum, self.rank, self.world_size = micro_batch, grad_accum, rank, world_size
        self.global_batch = micro_batch * grad_accum * world_size
        self.seed, self.horizon, self.action_dim, self.prompt_format = seed, horizon, action_dim, prompt_format
        self.pin = pin_memory and torch.cuda.is_available()
        self.prompt_bucket = prompt_bucket  # >0: prompt padding cut to a multiple of this, on the prefetch thread
        self.prefetch = prefetch
        self._perms = {}
        self.wait_time, self.last_wait = 0.0, 0.0
        self.step = start_step
        self._thread = None
        self._start()

    # --- pure functions of (seed, step)
    def _perm(self, epoch):
        perm = self._perms.get(epoch)
        if perm is None:
            perm = np.random.default_rng([self.seed, epoch]).permutation(len(self.frames))
            # keep a few recent epochs; the dict is replaced, never mutated, as the prefetch thread reads it too
            self._perms = {**{k: v for k, v in self._perms.items() if abs(k - epoch) <= 1}, epoch: perm}
        return perm

    def indices(self, step):
        """frame indices of the whole global batch of step (position j = sample_id j)."""
        pos = step * self.global_batch + np.arange(self.global_batch, dtype=np.int64)
        epoch, off = pos // len(self.frames), pos % len(self.frames)
        idx = np.empty_like(pos)
        for ep in np.unique(epoch):
            sel = epoch == ep
            idx[sel] = self.frames[self._perm(int(ep))[off[sel]]]
        return idx

    def get(self, step):
        """this rank's grad_accum micro-batches of step, without touching the iteration position."""
        idx = self.indices(step)
        out = []
        for m in range(self.grad_accum):
            j0 = (self.rank * self.grad_accum + m) * self.B
            out.append(self._gather(idx[j0:j0 + self.B], np.arange(j0, j0 + self.B)))
        return out

    def _gather(self, idx, sample_id):
        B, S, n_cams = len(idx), self.meta["image_size"], len(self.images)
        images = np.empty((B, n_cams, 3, S, S), np.uint8)
        order = np.argsort(idx, kind="stable")  # read the memmaps in file order
        for c, mm in enumerate(self.images):
            images[order, c] = mm[idx[order]]
        image_mask = np.ones((B, n_cams), bool)
        # action chunk: frames t..t+H-1, clamped to the episode's last frame (LeRobot delta_timestamps k/fps)
        chunk = idx[:, None] + np.arange(self.horizon)
        end = self.ep_end[idx][:, None]
        action_mask = chunk < end
        chunk = np.minimum(chunk, end - 1)
        a, s = self.stats["actions"], self.stats["state"]
        actions = pad_to_dim(normalize(self.actions[chunk], a["q01"], a["q99"]), self.action_dim)
        state = pad_to_dim(normalize(self.state[idx], s["q01"], s["q99"]), self.action_dim)
        rows = idx if self.prompt_format == "pi05" else self.task_index[idx]
        L, Ls = self.token_len, self.tokens.shape[1]
        tokens = np.zeros((B, L), np.int64)
        tokens[:, :min(L, Ls)] = self.tokens[rows][:, :L]
        token_mask = np.arange(L)[None] < self.token_lens[rows][:, None]
        batch = dict(images=images, image_mask=image_mask, tokens=tokens, token_mask=token_mask,
                     state=state.astype(np.float32), actions=actions.astype(np.float32), action_mask=action_mask,
                     sample_id=np.asarray(sample_id, np.int64))
        batch = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in batch.items()}
        if self.prompt_bucket:  # every camera slot is a real camera here: only prompt padding is cut
            batch, _ = trim_batch(batch, self.prompt_bucket, cameras=False)
        return {k: v.pin_memory() if self.pin and torch.is_tensor(v) else v for k, v in batch.items()}

    # --- iteration with a prefetch thread
    def _start(self):
        if self.prefetch <= 0:
            return
        self._queue, self._stop = queue.Queue(self.prefetch), threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(self.step, self._queue, self._stop), daemon=True)
        self._thread.start()

    def _produce(self, step, q, stop):
        while not stop.is_set():
            try:
                item = self.get(step)
            except BaseException as err:  # hand the error to the consumer
                item = err
            while not stop.is_set():
                try:
                    q.put((step, item), timeout=0.1)
                    break
                except queue.Full:
                    pass
            if isinstance(item, BaseException):
                return
            step += 1

    def close(self):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def state_dict(self):
        return {"step": self.step}

    def next(self):
        t0 = time.perf_counter()
        if self._thread is None:
            batches = self.get(self.step)
        else:
            step, batches = self._queue.get()
            if isinstance(batches, BaseException):
                raise batches
            assert step == self.step, (step, self.step)
        self.last_wait = time.perf_counter() - t0  # time the trainer spent waiting for data
        self.wait_time += self.last_wait
        self.step += 1
        return batches

    __next__ = next

    def __iter__(self):
        return self

    def unnormalize_actions(self, actions):
        """model output (..., action_dim) -> native action units (..., native action_dim)."""
        a = self.stats["actions"]
        return unnormalize(actions, a["q01"], a["q99"])[..., :len(a["q01"])]
