"""
Data for Pi0.5 training: dataset preparation, prompts, normalization, augmentation and the loader.

Prepare a LeRobot-format dataset (v2.x or v3.0) once into flat memmaps, then train from those:

    python data.py --src=/data/libero --out=data_cache/libero --tokenizer=paligemma_tokenizer.model --workers=16
    python data.py --synthetic --out=data_cache/synthetic --episodes=200 --image_size=64

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

Prompts are tokenized at preparation time so training never needs sentencepiece. The pi05 prompt holds the
discretized normalized state, so it is stored per frame; the pi0-style prompt (what pi05_libero uses) per task.

Training side (train.py): the loader yields this rank's micro-batches of a step, prompt padding already cut on its
prefetch thread (trim_batch), and the wrist flags of its camera slots come from meta.json:

    loader = Loader(data_dir, "train", micro_batch, grad_accum, rank, world_size, seed, horizon, prompt_bucket=32)
    for mb in next(loader):                                  # grad_accum dicts of (pinned) CPU tensors
        images = augment_images(mb["images"].cuda(), loader.wrist, params)   # params: sample_augment_params

pi05_libero uses prompt_format="pi0" (openpi sets discrete_state_input=False there); "pi05" puts the state in the
prompt. Tests: python -m pytest -q test_data.py

Runtime dependencies: torch, numpy, tqdm. Preparation also needs pyarrow, pillow, av and sentencepiece.
"""

import io
import json
import os
import queue
import re
import sys
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

def tokenize_prompt(tokenizer, task, state=None, max_len=200):
    """(int32 ids padded with 0 to max_len, length); longer prompts are truncated with a warning."""
    ids = encode_prompt(tokenizer, task, state)
    if len(ids) > max_len:
        warnings.warn(f"prompt of {len(ids)} tokens truncated to max_token_len={max_len}: {task!r}")
        ids = ids[:max_len]
    out = np.zeros(max_len, np.int32)
    out[:len(ids)] = ids
    return out, len(ids)

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
    return sentencepiece.SentencePieceProcessor(model_file=str(path))

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

def sample_augment_params(n, n_cams, generator=None, device="cpu"):
    """independent augmentation parameters per example and camera, each (n, n_cams[, 2]).
    draw them for the whole global batch from one seeded generator and index by sample_id, so every
    data-parallel layout sees the same augmentation."""
    gdev = generator.device if generator is not None else "cpu"
    u = lambda *shape: torch.rand(*shape, generator=generator, device=gdev)
    p = {
        "crop_frac": torch.full((n, n_cams), 0.95, device=gdev),  # openpi models/model.py: RandomCrop(0.95 W, 0.95 H)
        "crop_xy": u(n, n_cams, 2),                  # crop offset as a fraction of the free margin
        "angle": (u(n, n_cams) * 2 - 1) * 5.0,       # degrees, augmax Rotate((-5, 5))
        "brightness": 1 + (u(n, n_cams) * 2 - 1) * 0.3,  # ColorJitter(brightness=0.3, contrast=0.4, saturation=0.5)
        "contrast": 1 + (u(n, n_cams) * 2 - 1) * 0.4,
        "saturation": 1 + (u(n, n_cams) * 2 - 1) * 0.5,
    }
    return {k: v.to(device) for k, v in p.items()}

def augment_images(images, wrist, params):
    """training augmentation of openpi (models/model.py preprocess_observation, augmax), batched.
    images: uint8 (B, N, 3, S, S) or float in [-1, 1]; wrist: N bools; params from sample_augment_params,
    already sliced to these B examples. returns float32 in [-1, 1].
    non-wrist cameras: crop crop_frac of the side -> resize back to S -> rotate, fused into one bilinear affine
    warp. all cameras: brightness, contrast, saturation as openpi's PyTorch port does (preprocessing_pytorch.py):
    always applied and no hue jitter. augmax's ColorJitter would apply it with p=0.5 and also jitter hue (0.1) in
    HSV space; we drop both to keep the op simple and identical to the PyTorch reference."""
    x = images.float() / 255.0 if images.dtype == torch.uint8 else (images.float() + 1.0) / 2.0
    B, N, C, S, _ = x.shape
    geo = [i for i in range(N) if not wrist[i]]
    if geo:
        g = len(geo)
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
# preparation: LeRobot dataset -> prepared directory

class DataError(ValueError):
    """a problem with a source dataset or a prepared directory; the message names the file, key or value and says
    what to do about it."""

PREFIXES = ("observation.images.", "observation.")
STATE_KEYS = ("observation.state", "state")     # LeRobot's convention, then openpi's LIBERO conversion
ACTION_KEYS = ("action", "actions")

def is_wrist(camera):
    """the naming rule for wrist cameras (no geometric augmentation, openpi models/model.py): 'wrist' in the
    name. decided once, at preparation (overridable with --wrist=), and kept in meta.json's 'wrist' list;
    everything later reads that list."""
    return "wrist" in camera.lower()

def camera_name(key):
    """observation.images.wrist_image -> wrist_image (the name in meta.json and in serving's observation keys)"""
    return key[len(PREFIXES[0]):] if key.startswith(PREFIXES[0]) else key

def _resolve_key(features, name, what, flag):
    # an explicit name: LIBERO's bare keys (image, state) or LeRobot's prefixed ones (observation.images.top)
    bare = name
    for p in PREFIXES:
        if bare.startswith(p):
            bare = bare[len(p):]
    for k in [name, bare] + [p + bare for p in PREFIXES]:
        if k in features:
            return k
    raise DataError(f"{what} key {name!r} not in dataset features; available: {sorted(features)}; fix --{flag}=")

def _pick(features, candidates, what, flag):
    found = [k for k in candidates if k in features]
    if len(found) == 1:
        return found[0]
    if not found:
        raise DataError(f"no {what} feature in meta/info.json (looked for {list(candidates)}); features: "
                        f"{sorted(features)}; pass --{flag}=<feature>")
    raise DataError(f"ambiguous {what}: the dataset has both {found}; pass --{flag}=<one of them>")

def select_features(features, cameras=None, state_key=None, action_key=None, wrist=None):
    """the dataset features to prepare: camera keys (explicit, else every image/video feature in the dataset's
    order), their names and wrist flags (by name unless `wrist` lists the wrist cameras), the state and the action
    key (explicit, else LeRobot's or openpi's standard name)."""
    if cameras:
        cam_keys = [_resolve_key(features, c, "camera", "cameras") for c in cameras]
        for c, k in zip(cameras, cam_keys):
            if features[k].get("dtype") not in ("image", "video"):
                raise DataError(f"camera {c!r} ({k}) has dtype {features[k].get('dtype')!r}, expected image or video; "
                                f"fix --cameras=")
    else:
        cam_keys = [k for k, f in features.items() if f.get("dtype") in ("image", "video")]
        if not cam_keys:
            raise DataError(f"no image or video features in meta/info.json; features: {sorted(features)}; "
                            f"pass --cameras=<feature,...>")
    names = [camera_name(k) for k in cam_keys]
    if wrist is None:
        flags = [is_wrist(n) for n in names]
    else:
        unknown = sorted(set(wrist) - set(names) - set(cam_keys))
        if unknown:
            raise DataError(f"--wrist names {unknown}, which are not among the cameras {names}")
        flags = [n in wrist or k in wrist for n, k in zip(names, cam_keys)]
    state = _resolve_key(features, state_key, "state", "state_key") if state_key else _pick(features, STATE_KEYS, "state", "state_key")
    actions = (_resolve_key(features, action_key, "action", "action_key") if action_key
               else _pick(features, ACTION_KEYS, "action", "action_key"))
    return dict(cams=cam_keys, names=names, wrist=flags, state=state, actions=actions)

def _image_hw(feature):
    # image/video features store shape [H, W, C] or [C, H, W]; names say which when present
    shape, names = list(feature["shape"]), feature.get("names") or []
    names = [str(n).lower() for n in names] if isinstance(names, list) else []
    if names and names[0].startswith("channel"):
        return shape[1], shape[2]
    if not names and shape[0] == 3 and shape[-1] != 3:
        return shape[1], shape[2]
    return shape[0], shape[1]

def _read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]

def _read_parquet_dir(path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(path) for f in fs if f.endswith(".parquet"))
    if not files:
        raise DataError(f"no parquet files under {path}")
    return pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()

def _scan_lerobot(src, cameras=None, state_key=None, action_key=None, wrist=None):
    """read meta/ and list one job per episode. fields relied on:
    meta/info.json: codebase_version, fps, features (dtype 'image'|'video', shape, names), data_path, video_path,
      chunks_size (v2: chunk = episode_index // chunks_size), total_episodes.
    v2.x: meta/tasks.jsonl {task_index, task}; meta/episodes.jsonl {episode_index, length}; one parquet per
      episode; one mp4 per episode and camera, frame times = parquet 'timestamp'.
    v3.0: meta/tasks.parquet (task string in column 'task' or the pandas index column, plus task_index);
      meta/episodes/**.parquet rows with episode_index, length, data/chunk_index, data/file_index,
      videos/{key}/chunk_index, videos/{key}/file_index, videos/{key}/from_timestamp; parquet and mp4 files
      hold many episodes, frame times = from_timestamp + parquet 'timestamp'."""
    import pyarrow.parquet as pq
    info_path = os.path.join(src, "meta", "info.json")
    if not os.path.exists(info_path):
        raise DataError(f"{info_path} not found: --src must be the root of a LeRobot dataset (v2.x or v3.0)")
    with open(info_path) as f:
        info = json.load(f)
    version = str(info.get("codebase_version", ""))
    features = info["features"]
    keys = select_features(features, cameras, state_key, action_key, wrist)
    cam_keys = keys["cams"]
    kinds = [features[k]["dtype"] for k in cam_keys]
    hw = [_image_hw(features[k]) for k in cam_keys]
    fps = float(info["fps"])
    jobs = []
    if version.startswith("v2"):
        rows = _read_jsonl(os.path.join(src, "meta", "tasks.jsonl"))
        tasks = {int(r["task_index"]): r["task"] for r in rows}
        ep_file = os.path.join(src, "meta", "episodes.jsonl")
        eps = [int(r["episode_index"]) for r in _read_jsonl(ep_file)] if os.path.exists(ep_file) \
            else list(range(int(info["total_episodes"])))
        csize = int(info.get("chunks_size", 1000))
        for e in sorted(eps):
            fmt = dict(episode_chunk=e // csize, episode_index=e)
            path = os.path.join(src, info["data_path"].format(**fmt))
            videos = {k: (os.path.join(src, info["video_path"].format(video_key=k, **fmt)), 0.0)
                      for k, kind in zip(cam_keys, kinds) if kind == "video"}
            jobs.append(dict(episode=e, data_file=path, length=pq.read_metadata(path).num_rows, videos=videos,
                             shared_file=False))
    elif version.startswith("v3"):
        rows = pq.read_table(os.path.join(src, "meta", "tasks.parquet")).to_pylist()
        name = "task" if "task" in rows[0] else next(k for k, v in rows[0].items() if isinstance(v, str))
        tasks = {int(r["task_index"]): r[name] for r in rows}
        for r in sorted(_read_parquet_dir(os.path.join(src, "meta", "episodes")), key=lambda r: r["episode_index"]):
            e = int(r["episode_index"])
            path = os.path.join(src, info["data_path"].format(
                chunk_index=int(r["data/chunk_index"]), file_index=int(r["data/file_index"])))
            videos = {}
            for k, kind in zip(cam_keys, kinds):
                if kind == "video":
                    vp = info["video_path"].format(video_key=k, chunk_index=int(r[f"videos/{k}/chunk_index"]),
                                                   file_index=int(r[f"videos/{k}/file_index"]))
                    videos[k] = (os.path.join(src, vp), float(r[f"videos/{k}/from_timestamp"]))
            jobs.append(dict(episode=e, data_file=path, length=int(r["length"]), videos=videos, shared_file=True))
    else:
        raise DataError(f"unsupported LeRobot codebase_version {version!r} in {info_path} (need v2.x or v3.0)")
    for j in jobs:
        if j["length"] == 0:
            raise DataError(f"episode {j['episode']}: empty episode (0 frames) in {j['data_file']}")
        j.update(keys=keys, kinds=kinds, hw=hw, fps=fps, src=src)
    return info, tasks, jobs

_table_cache = {}  # per process: the last parquet file read (v3 files hold many episodes), per column set

def _episode_table(job, columns):
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    path, e = job["data_file"], job["episode"]
    key = (path, tuple(columns))
    if key not in _table_cache:
        _table_cache.clear()
        have = pq.read_schema(path).names
        missing = [c for c in columns if c not in have]
        if missing:
            raise DataError(f"episode {e}: columns {missing} missing from {path}; available: {have}")
        extra = [c for c in ("episode_index", "frame_index") if c in have and c not in columns]
        _table_cache[key] = pq.read_table(path, columns=list(columns) + extra)
    table = _table_cache[key]
    if job["shared_file"]:
        table = table.filter(pc.equal(table["episode_index"], e))
    if table.num_rows != job["length"]:
        raise DataError(f"episode {e}: {table.num_rows} rows in {path}, metadata says {job['length']}")
    if "frame_index" in table.column_names:
        table = table.take(pc.sort_indices(table["frame_index"]))
    return table

def _vectors(table, key, e):
    col = table[key].combine_chunks()
    n = table.num_rows
    vals = (col.flatten() if hasattr(col, "flatten") else col).to_numpy(zero_copy_only=False)
    if vals.size % n:
        raise DataError(f"episode {e}: column {key!r} has ragged rows ({vals.size} values for {n} frames)")
    return vals.astype(np.float32).reshape(n, -1)

def _decode_image(cell, job, i, key):
    from PIL import Image
    e = job["episode"]
    raw = cell.get("bytes") if isinstance(cell, dict) else cell
    if raw is None and isinstance(cell, dict) and cell.get("path"):
        p = cell["path"] if os.path.isabs(cell["path"]) else os.path.join(job["src"], cell["path"])
        with open(p, "rb") as f:
            raw = f.read()
    if raw is None:
        raise DataError(f"episode {e} frame {i}: camera {key!r} has neither image bytes nor a path")
    try:
        img = Image.open(io.BytesIO(raw))
        img.load()
    except Exception as err:
        raise DataError(f"episode {e} frame {i}: camera {key!r}: cannot decode image ({err})") from None
    return np.asarray(img)

def _check_shape(arr, job, i, key, hw):
    if arr.shape != (hw[0], hw[1], 3):
        raise DataError(f"episode {job['episode']} frame {i}: camera {key!r} image has shape {arr.shape}, "
                         f"expected {(hw[0], hw[1], 3)} from meta/info.json")

def _decode_video(path, t0, times, job, key, hw, size):
    try:
        import av
    except ImportError:
        raise ImportError("decoding video needs PyAV: pip install av") from None
    e, fps = job["episode"], job["fps"]
    want = t0 + np.asarray(times, np.float64)
    tol = 0.4 / fps  # nearest decoded frame must be well within one frame period
    out = np.zeros((len(want), 3, size, size), np.uint8)
    got = np.zeros(len(want), bool)
    try:
        with av.open(path) as container:
            stream = container.streams.video[0]
            if t0 > 0:
                container.seek(int(t0 / stream.time_base), stream=stream, backward=True)
            for frame in container.decode(stream):
                if frame.pts is None:
                    continue
                t = float(frame.pts * stream.time_base)
                if t > want[-1] + tol:
                    break
                j = int(np.argmin(np.abs(want - t)))
                if abs(want[j] - t) <= tol and not got[j]:
                    arr = frame.to_ndarray(format="rgb24")
                    _check_shape(arr, job, j, key, hw)
                    out[j] = resize_with_pad(arr, size).transpose(2, 0, 1)
                    got[j] = True
    except (av.error.FFmpegError, OSError) as err:
        raise DataError(f"episode {e}: camera {key!r}: cannot decode video {path} ({err})") from None
    if not got.all():
        i = int(np.flatnonzero(~got)[0])
        raise DataError(f"episode {e} frame {i}: camera {key!r}: no video frame at t={want[i]:.4f}s in {path} "
                         f"({int((~got).sum())} of {len(want)} frames missing; video shorter than the parquet?)")
    return out

def _low_dim(job):
    """one episode's state, actions, task index and timestamps, read without the image columns."""
    e, keys = job["episode"], job["keys"]
    table = _episode_table(job, [keys["state"], keys["actions"], "task_index"] + (["timestamp"] if job["videos"] else []))
    times = table["timestamp"].to_numpy() if job["videos"] else None
    return (_vectors(table, keys["state"], e), _vectors(table, keys["actions"], e),
            table["task_index"].to_numpy().astype(np.int64), times)

def _load_episode(job):
    """decode one episode's kept frames and write them straight into the output memmaps."""
    e, keys, size, keep = job["episode"], job["keys"], job["image_size"], job["keep"]
    image_cols = [k for k, kind in zip(keys["cams"], job["kinds"]) if kind == "image"]
    table = _episode_table(job, image_cols) if image_cols else None
    rows = np.flatnonzero(keep)
    for c, (key, kind, hw) in enumerate(zip(keys["cams"], job["kinds"], job["hw"])):
        mm = np.load(os.path.join(job["out"], f"images_{c}.npy"), mmap_mode="r+")
        if kind == "image":
            cells = table[key].to_pylist()
            for j, i in enumerate(rows):
                arr = _decode_image(cells[i], job, i, key)
                _check_shape(arr, job, i, key, hw)
                mm[job["start"] + j] = resize_with_pad(arr, size).transpose(2, 0, 1)
        else:
            path, t0 = job["videos"][key]
            mm[job["start"]:job["start"] + len(rows)] = _decode_video(path, t0, job["times"][rows], job, key, hw, size)
        del mm  # a shared mapping: the page cache makes the writes visible, no msync needed
    return len(rows)

def _finite_frames(jobs, lows, drop):
    """per episode, the frames whose state and actions are finite. a non-finite value is an error naming the
    first one (episode, frame, values), unless drop: then such frames are skipped and counted."""
    keep = [np.isfinite(s).all(1) & np.isfinite(a).all(1) for s, a, _, _ in lows]
    bad = sum(int((~k).sum()) for k in keep)
    if bad and not drop:
        j, (s, a, _, _), k = next((j, low, k) for j, low, k in zip(jobs, lows, keep) if not k.all())
        i = int(np.flatnonzero(~k)[0])
        what = "state" if not np.isfinite(s[i]).all() else "action"
        raise DataError(f"episode {j['episode']} frame {i}: non-finite {what} {(s if what == 'state' else a)[i].tolist()} "
                        f"in {j['data_file']} ({bad} such frames in {sum(not k.all() for k in keep)} episodes); fix the "
                        f"source dataset or pass --drop_nonfinite to skip those frames")
    return keep, bad

def write_prepared(out, meta, state, actions, episode_starts, task_index, tasks, tokenizer, max_token_len, stats=None):
    """write low-dim arrays, stats, both token tables and meta.json (last, so its presence means complete).
    stats: a stats.json / openpi norm_stats.json to use instead of computing them from this data."""
    N = len(state)
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
    tok05 = np.lib.format.open_memmap(os.path.join(out, "tokens_pi05.npy"), "w+", np.int32, (N, L))
    len05 = np.zeros(N, np.int32)
    cut05 = sum(put(tok05, len05, i, encode_prompt(tokenizer, tasks[task_index[i]], nstate[i]))
                for i in tqdm(range(N), desc="tokenize", unit="frame", disable=N < 10000, mininterval=1))
    tok05.flush()
    del tok05
    np.save(os.path.join(out, "tokens_pi0.npy"), tok0)
    np.save(os.path.join(out, "tokens_pi0_len.npy"), len0)
    np.save(os.path.join(out, "tokens_pi05_len.npy"), len05)
    print(f"prompts: {cut0} of {len(tasks)} task prompts (pi0 format) and {cut05} of {N} frame prompts (pi05 format, "
          f"with the state) cut to max_token_len={L}" + ("; prepare with a larger --max_token_len to keep them whole"
                                                        if cut0 or cut05 else ""))
    meta.update(num_frames=N, num_episodes=len(episode_starts) - 1, state_dim=state.shape[1],
                action_dim=actions.shape[1], tasks=list(tasks), max_token_len=L,
                max_prompt_len_pi05=int(len05.max(initial=0)), max_prompt_len_pi0=int(len0.max(initial=0)),
                cut_prompts_pi05=int(cut05), cut_prompts_pi0=int(cut0), stats=how)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta

def prepare(src, out, tokenizer, cameras=None, state_key=None, action_key=None, wrist=None, max_token_len=200,
            image_size=224, workers=None, stats=None, drop_nonfinite=False):
    """LeRobot v2.x/v3.0 dataset at src -> prepared directory out. tokenizer: SentencePiece model path or an
    object with encode(text, add_bos). cameras / state_key / action_key: feature names (default: found by
    select_features); wrist: the camera names that are wrist cameras (default: by name). stats: a stats.json /
    openpi norm_stats.json to use (e.g. the one a checkpoint ships, so pi05 state prompts match it); else computed
    here. The low-dim data is read and checked first (non-finite values are an error, or skipped with
    drop_nonfinite); then episodes decode in a process pool and stream into preallocated memmaps."""
    try:
        import pyarrow  # noqa: F401
        import PIL  # noqa: F401
    except ImportError as err:
        raise ImportError(f"preparing a LeRobot dataset needs pyarrow and pillow: pip install pyarrow pillow ({err})")
    info, tasks, jobs = _scan_lerobot(src, cameras, state_key, action_key, wrist)
    words = tokenizer == "words"
    tok = word_tokenizer(tasks.values()) if words else load_tokenizer(tokenizer) if isinstance(tokenizer, (str, os.PathLike)) else tokenizer
    keys = jobs[0]["keys"]
    lows = [_low_dim(j) for j in tqdm(jobs, desc="read low-dim", unit="episode", disable=len(jobs) < 100)]
    for name, k in (("state", 0), ("actions", 1)):
        dims = {low[k].shape[1] for low in lows}
        if len(dims) != 1:
            raise DataError(f"{name} dimension differs between episodes: {sorted(dims)} in {src}")
    keep, dropped = _finite_frames(jobs, lows, drop_nonfinite)
    if dropped:
        print(f"dropped {dropped} frames with non-finite state or actions (--drop_nonfinite)")
    jobs, lows, keep = zip(*[(j, low, k) for j, low, k in zip(jobs, lows, keep) if k.any()])  # episodes left
    os.makedirs(out, exist_ok=True)
    if os.path.exists(os.path.join(out, "meta.json")):
        os.remove(os.path.join(out, "meta.json"))  # an interrupted run must not look complete
    lengths = np.array([int(k.sum()) for k in keep], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    N, S = int(starts[-1]), image_size
    for c in range(len(keys["cams"])):
        np.lib.format.open_memmap(os.path.join(out, f"images_{c}.npy"), "w+", np.uint8, (N, 3, S, S)).flush()
    for k, (j, low, kp) in enumerate(zip(jobs, lows, keep)):
        j.update(start=int(starts[k]), out=out, image_size=S, keep=kp, times=low[3])
    workers = os.cpu_count() if workers is None else workers
    bar = tqdm(total=N, desc="prepare", unit="frame", smoothing=0.05)
    if workers > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(workers) as pool:
            for n in pool.imap_unordered(_load_episode, jobs, chunksize=1):
                bar.update(n)
    else:
        for n in map(_load_episode, jobs):
            bar.update(n)
    bar.close()
    state = np.concatenate([low[0][k] for low, k in zip(lows, keep)])
    actions = np.concatenate([low[1][k] for low, k in zip(lows, keep)])
    task = np.concatenate([low[2][k] for low, k in zip(lows, keep)])
    # task indices are remapped to positions in the sorted task table
    order = sorted(tasks)
    remap = {ti: p for p, ti in enumerate(order)}
    unknown = set(np.unique(task).tolist()) - set(remap)
    if unknown:
        raise DataError(f"task_index values {sorted(unknown)} are not in the dataset's task table ({src}/meta)")
    task = np.array([remap[t] for t in task.tolist()], np.int32)
    meta = dict(format=1, source=os.path.abspath(src), codebase_version=info.get("codebase_version"),
                cameras=keys["names"], camera_keys=keys["cams"], wrist=keys["wrist"], state_key=keys["state"],
                action_key=keys["actions"], image_size=S, fps=float(info["fps"]), episode_index=[j["episode"] for j in jobs],
                dropped_frames=dropped,
                tokenizer="words" if words else os.path.abspath(tokenizer) if isinstance(tokenizer, (str, os.PathLike)) else type(tok).__name__,
                vocab_size=int(tok.get_piece_size()) if hasattr(tok, "get_piece_size") else len(tok.vocab))
    if words:
        meta["vocab"] = tok.vocab
    return write_prepared(out, meta, state, actions, starts, task, [tasks[t] for t in order], tok, max_token_len, stats)

def inspect(src, tokenizer=None, cameras=None, state_key=None, action_key=None, wrist=None, max_token_len=200,
            stats=None, out=print):
    """what prepare would do, without writing anything: the features, episode/frame counts, the cameras it would
    use, and the prompts of the first frame (the pi05 one with the state normalized by this dataset's quantiles,
    or by `stats`)."""
    info, tasks, jobs = _scan_lerobot(src, cameras, state_key, action_key, wrist)
    keys = jobs[0]["keys"]
    role = {k: f"camera {i} {n!r}" + (" (wrist)" if w else "") for i, (k, n, w) in enumerate(zip(keys["cams"], keys["names"], keys["wrist"]))}
    role.update({keys["state"]: "state", keys["actions"]: "actions"})
    out(f"{src}: LeRobot {info.get('codebase_version')}, {len(jobs)} episodes, {sum(j['length'] for j in jobs)} frames, "
        f"{info.get('fps')} fps, {len(tasks)} tasks")
    width = max(len(k) for k in info["features"])
    for k, f in info["features"].items():
        out(f"  {k:<{width}}  {str(f.get('dtype')):<8} {str(f.get('shape')):<16} {role.get(k, '')}")
    lows = [_low_dim(j) for j in jobs]
    st = load_stats(stats)["state"] if stats else compute_stats(np.concatenate([low[0] for low in lows]))
    s0, task = lows[0][0][0], tasks[int(lows[0][2][0])]
    nstate = normalize(s0, np.asarray(st["q01"], np.float32), np.asarray(st["q99"], np.float32))
    tok = (word_tokenizer(tasks.values()) if tokenizer == "words" else
           load_tokenizer(tokenizer) if isinstance(tokenizer, (str, os.PathLike)) else tokenizer)
    for fmt, state in (("pi05", nstate), ("pi0", None)):
        n = f", {len(encode_prompt(tok, task, state))} tokens" if tok else ""
        out(f"prompt of frame 0 ({fmt}){n}: {format_prompt(task, state)!r}")
    if tok:
        long = [t for t in tasks.values() if len(encode_prompt(tok, t)) > max_token_len]
        out(f"{len(long)} of {len(tasks)} tasks exceed max_token_len={max_token_len} in the pi0 format")
    return dict(info=info, keys=keys, episodes=len(jobs), tasks=tasks)

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

def split_episodes(num_episodes, val_fraction=0.05, val_episodes=None):
    """(train, val) episode positions. val_episodes: a count or a list; else round(val_fraction * E),
    at least 1 when val_fraction > 0. held-out episodes are evenly spaced, so every part of the dataset
    (LIBERO is ordered by suite) is represented; independent of the training seed."""
    E = num_episodes
    if val_episodes is None:
        n = int(round(val_fraction * E))
        val_episodes = max(1, n) if val_fraction > 0 and E > 1 else n
    if isinstance(val_episodes, int):
        assert 0 <= val_episodes < E, f"val_episodes={val_episodes} must be in [0, {E})"
        val = np.floor((np.arange(val_episodes) + 0.5) * E / max(val_episodes, 1)).astype(np.int64)
    else:
        val = np.unique(np.asarray(val_episodes, np.int64))
    train = np.setdiff1d(np.arange(E), val)
    return train, val

def _prepare_hint(data_dir, meta=None):
    src = (meta or {}).get("source")
    if src == "synthetic":
        return f"python sim.py synthetic --out={data_dir}"
    return f"python data.py --src={src or '<LeRobot dataset>'} --out={data_dir} --tokenizer=<tokenizer.model>"

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
                        f"or write the synthetic demo data with --synthetic_episodes=200")
    if not os.path.exists(meta_path):
        raise DataError(f"{meta_path} not found: {data_dir} is not a prepared dataset, or its preparation did not "
                        f"finish; prepare it: {_prepare_hint(data_dir)}")
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        N, E, L, S = meta["num_frames"], meta["num_episodes"], meta["max_token_len"], meta["image_size"]
        T, cams, ds, da = len(meta["tasks"]), meta["cameras"], meta["state_dim"], meta["action_dim"]
    except (ValueError, KeyError, TypeError) as err:
        raise DataError(f"{meta_path} is damaged ({type(err).__name__}: {err}); prepare the directory again: "
                        f"{_prepare_hint(data_dir)}") from None
    hint = _prepare_hint(data_dir, meta)
    arrays = {f"images_{c}.npy": (np.uint8, (N, 3, S, S)) for c in range(len(cams))}
    arrays.update({"state.npy": (np.float32, (N, ds)), "actions.npy": (np.float32, (N, da)),
                   "episode_starts.npy": (np.int64, (E + 1,)), "task_index.npy": (np.int32, (N,)),
                   "tokens_pi05.npy": (np.int32, (N, L)), "tokens_pi05_len.npy": (np.int32, (N,)),
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
      images uint8 (B, n_slots, 3, S, S), image_mask bool (B, n_slots), tokens int64 (B, L), token_mask bool (B, L),
      state float32 (B, action_dim) normalized and zero-padded, actions float32 (B, H, action_dim) normalized and
      zero-padded, action_mask bool (B, H) (False past the episode end, where the last action repeats as LeRobot
      clamps), sample_id int64 (B,).
    """

    def __init__(self, data_dir, split="train", micro_batch=32, grad_accum=1, rank=0, world_size=1, seed=0,
                 horizon=10, action_dim=32, prompt_format="pi05", camera_slots=None, val_fraction=0.05,
                 val_episodes=None, prefetch=2, pin_memory=True, start_step=0, token_len=None, prompt_bucket=0):
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
        n_cams = len(self.images)
        self.camera_slots = camera_slots or n_cams
        assert self.camera_slots >= n_cams, f"camera_slots={camera_slots} < {n_cams} cameras in the dataset"
        # extra slots are empty and masked (openpi LiberoInputs: right_wrist_0_rgb = zeros, mask False)
        self.wrist = list(meta["wrist"]) + [True] * (self.camera_slots - n_cams)
        assert action_dim >= meta["action_dim"] and action_dim >= meta["state_dim"], "action_dim below native dims"
        self.token_len = token_len or meta["max_token_len"]
        longest = int(self.token_lens.max(initial=0))
        if self.token_len < longest:
            warnings.warn(f"token_len={self.token_len} cuts prompts of up to {longest} tokens")
        lengths = np.diff(starts)
        self.ep_end = np.repeat(starts[1:], lengths)  # per frame: one past its episode's last frame
        train, val = split_episodes(len(lengths), val_fraction, val_episodes)
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
        images = np.zeros((B, self.camera_slots, 3, S, S), np.uint8)
        order = np.argsort(idx, kind="stable")  # read the memmaps in file order
        for c, mm in enumerate(self.images):
            images[order, c] = mm[idx[order]]
        image_mask = np.zeros((B, self.camera_slots), bool)
        image_mask[:, :n_cams] = True
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
        if self.prompt_bucket:  # camera slots stay: padded ones are the reference layout, asked for on purpose
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

    def seek(self, step):
        self.close()
        self.step = step
        self._start()

    def state_dict(self):
        return {"step": self.step}

    def load_state_dict(self, state):
        self.seek(int(state["step"]))

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

# -----------------------------------------------------------------------------

def main(argv):
    import argparse
    p = argparse.ArgumentParser(description="prepare a LeRobot dataset for training")
    p.add_argument("--src", help="LeRobot dataset root (with meta/info.json)")
    p.add_argument("--out", help="output directory")
    p.add_argument("--tokenizer", help="SentencePiece model file (PaliGemma tokenizer), or 'words': a word "
                                        "vocabulary of the dataset's tasks, for models trained from scratch")
    p.add_argument("--inspect", action="store_true", help="print what would be prepared, write nothing")
    p.add_argument("--cameras", help="comma-separated camera features, in slot order (default: every image/video feature)")
    p.add_argument("--wrist", help="comma-separated cameras that are wrist cameras (default: those named *wrist*; 'none')")
    p.add_argument("--state_key", help="state feature (default: observation.state or state)")
    p.add_argument("--action_key", help="action feature (default: action or actions)")
    p.add_argument("--drop_nonfinite", action="store_true", help="skip frames with NaN/inf state or actions")
    p.add_argument("--max_token_len", type=int, default=None, help="prompt slots (default 200, pi05's)")
    p.add_argument("--image_size", type=int, default=None, help="image side after resize_with_pad (default 224)")
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--stats", default=None, help="use this stats.json / openpi norm_stats.json instead of computing")
    args = p.parse_args(argv)
    split = lambda v: None if v is None else [] if v == "none" else v.split(",")
    feats = dict(cameras=split(args.cameras), state_key=args.state_key, action_key=args.action_key, wrist=split(args.wrist))
    t0 = time.time()
    try:
        if args.inspect:
            if not args.src:
                p.error("--inspect needs --src")
            inspect(args.src, args.tokenizer, max_token_len=args.max_token_len or 200, stats=args.stats, **feats)
            return
        if not args.out:
            p.error("--out is required")
        if not (args.src and args.tokenizer):
            p.error("--src and --tokenizer are required")
        meta = prepare(args.src, args.out, args.tokenizer, max_token_len=args.max_token_len or 200,
                       image_size=args.image_size or 224, workers=args.workers, stats=args.stats,
                       drop_nonfinite=args.drop_nonfinite, **feats)
    except DataError as err:
        raise SystemExit(f"data.py: {err}")
    print(f"wrote {args.out}: {meta['num_episodes']} episodes, {meta['num_frames']} frames, cameras {meta['cameras']} "
          f"(wrist {meta['wrist']}), {len(meta['tasks'])} tasks, longest prompt pi05 {meta['max_prompt_len_pi05']} / pi0 "
          f"{meta['max_prompt_len_pi0']} tokens, {time.time() - t0:.1f}s")

if __name__ == "__main__":
    main(sys.argv[1:])
