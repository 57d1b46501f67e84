"""
Prepare a LeRobot-format dataset (v2.x or v3.0) once into the flat memmaps train.py reads (data.py holds that format,
its checks and the loader): the features found by name, frames decoded in a process pool (PNG in parquet, or mp4
through PyAV), quantile statistics, both prompt formats tokenized.

    python prepare.py --src=/data/libero --inspect --tokenizer=checkpoints/paligemma_tokenizer.model     # look first; writes nothing
    python prepare.py --src=/data/libero --out=data_cache/libero --tokenizer=checkpoints/paligemma_tokenizer.model
    python prepare.py --src=data_cache/mt10_lerobot --out=data_cache/mt10 --tokenizer=words --image_size=128

Dependencies beyond training's: pyarrow, pillow, av (video datasets), sentencepiece (a SentencePiece tokenizer).
Tests: python -m pytest -q test_data.py
"""
import io
import json
import os
import sys
import time

import numpy as np
from tqdm import tqdm

import data

PREFIXES = ("observation.images.", "observation.")
STATE_KEYS = ("observation.state", "state")     # LeRobot's convention, then openpi's LIBERO conversion
ACTION_KEYS = ("action", "actions")

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
    raise data.DataError(f"{what} key {name!r} not in dataset features; available: {sorted(features)}; fix --{flag}=")

def _pick(features, candidates, what, flag):
    found = [k for k in candidates if k in features]
    if len(found) == 1:
        return found[0]
    if not found:
        raise data.DataError(f"no {what} feature in meta/info.json (looked for {list(candidates)}); features: "
                        f"{sorted(features)}; pass --{flag}=<feature>")
    raise data.DataError(f"ambiguous {what}: the dataset has both {found}; pass --{flag}=<one of them>")

def select_features(features, cameras=None, state_key=None, action_key=None, wrist=None):
    """the dataset features to prepare: camera keys (explicit, else every image/video feature in the dataset's
    order), their names and wrist flags (by name unless `wrist` lists the wrist cameras), the state and the action
    key (explicit, else LeRobot's or openpi's standard name)."""
    if cameras:
        cam_keys = [_resolve_key(features, c, "camera", "cameras") for c in cameras]
        for c, k in zip(cameras, cam_keys):
            if features[k].get("dtype") not in ("image", "video"):
                raise data.DataError(f"camera {c!r} ({k}) has dtype {features[k].get('dtype')!r}, expected image or video; "
                                f"fix --cameras=")
    else:
        cam_keys = [k for k, f in features.items() if f.get("dtype") in ("image", "video")]
        if not cam_keys:
            raise data.DataError(f"no image or video features in meta/info.json; features: {sorted(features)}; "
                            f"pass --cameras=<feature,...>")
    names = [camera_name(k) for k in cam_keys]
    if wrist is None:
        flags = [data.is_wrist(n) for n in names]
    else:
        unknown = sorted(set(wrist) - set(names) - set(cam_keys))
        if unknown:
            raise data.DataError(f"--wrist names {unknown}, which are not among the cameras {names}")
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
        raise data.DataError(f"no parquet files under {path}")
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
        raise data.DataError(f"{info_path} not found: --src must be the root of a LeRobot dataset (v2.x or v3.0)")
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
        raise data.DataError(f"unsupported LeRobot codebase_version {version!r} in {info_path} (need v2.x or v3.0)")
    for j in jobs:
        if j["length"] == 0:
            raise data.DataError(f"episode {j['episode']}: empty episode (0 frames) in {j['data_file']}")
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
            raise data.DataError(f"episode {e}: columns {missing} missing from {path}; available: {have}")
        extra = [c for c in ("episode_index", "frame_index") if c in have and c not in columns]
        _table_cache[key] = pq.read_table(path, columns=list(columns) + extra)
    table = _table_cache[key]
    if job["shared_file"]:
        table = table.filter(pc.equal(table["episode_index"], e))
    if table.num_rows != job["length"]:
        raise data.DataError(f"episode {e}: {table.num_rows} rows in {path}, metadata says {job['length']}")
    if "frame_index" in table.column_names:
        table = table.take(pc.sort_indices(table["frame_index"]))
    return table

def _vectors(table, key, e):
    col = table[key].combine_chunks()
    n = table.num_rows
    vals = (col.flatten() if hasattr(col, "flatten") else col).to_numpy(zero_copy_only=False)
    if vals.size % n:
        raise data.DataError(f"episode {e}: column {key!r} has ragged rows ({vals.size} values for {n} frames)")
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
        raise data.DataError(f"episode {e} frame {i}: camera {key!r} has neither image bytes nor a path")
    try:
        img = Image.open(io.BytesIO(raw))
        img.load()
    except Exception as err:
        raise data.DataError(f"episode {e} frame {i}: camera {key!r}: cannot decode image ({err})") from None
    return np.asarray(img)

def _check_shape(arr, job, i, key, hw):
    if arr.shape != (hw[0], hw[1], 3):
        raise data.DataError(f"episode {job['episode']} frame {i}: camera {key!r} image has shape {arr.shape}, "
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
                    out[j] = data.resize_with_pad(arr, size).transpose(2, 0, 1)
                    got[j] = True
    except (av.error.FFmpegError, OSError) as err:
        raise data.DataError(f"episode {e}: camera {key!r}: cannot decode video {path} ({err})") from None
    if not got.all():
        i = int(np.flatnonzero(~got)[0])
        raise data.DataError(f"episode {e} frame {i}: camera {key!r}: no video frame at t={want[i]:.4f}s in {path} "
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
    keys, size, keep = job["keys"], job["image_size"], job["keep"]
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
                mm[job["start"] + j] = data.resize_with_pad(arr, size).transpose(2, 0, 1)
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
        raise data.DataError(f"episode {j['episode']} frame {i}: non-finite {what} {(s if what == 'state' else a)[i].tolist()} "
                        f"in {j['data_file']} ({bad} such frames in {sum(not k.all() for k in keep)} episodes); fix the "
                        f"source dataset or pass --drop_nonfinite to skip those frames")
    return keep, bad

def prepare(src, out, tokenizer, cameras=None, state_key=None, action_key=None, wrist=None, max_token_len=200,
            image_size=224, workers=None, stats=None, drop_nonfinite=False):
    """LeRobot v2.x/v3.0 dataset at src -> prepared directory out. tokenizer: SentencePiece model path or an
    object with encode(text, add_bos). cameras / state_key / action_key: feature names (default: found by
    select_features); wrist: the camera names that are wrist cameras (default: by name). stats: a stats.json /
    openpi norm_stats.json to use (e.g. the one a checkpoint ships, so pi05 state prompts match it); else computed
    here. The low-dim data is read and checked first (non-finite values are an error, or skipped with
    drop_nonfinite); then episodes decode in a pool of `workers` spawned processes (a script that calls this with
    workers > 1 needs the `if __name__ == "__main__":` guard) and stream into preallocated memmaps."""
    try:
        import pyarrow  # noqa: F401
        import PIL  # noqa: F401
    except ImportError as err:
        raise ImportError(f"preparing a LeRobot dataset needs pyarrow and pillow: pip install pyarrow pillow ({err})")
    info, tasks, jobs = _scan_lerobot(src, cameras, state_key, action_key, wrist)
    words = tokenizer == "words"
    tok = data.word_tokenizer(tasks.values()) if words else data.load_tokenizer(tokenizer) if isinstance(tokenizer, (str, os.PathLike)) else tokenizer
    keys = jobs[0]["keys"]
    lows = [_low_dim(j) for j in tqdm(jobs, desc="read low-dim", unit="episode", disable=len(jobs) < 100)]
    for name, k in (("state", 0), ("actions", 1)):
        dims = {low[k].shape[1] for low in lows}
        if len(dims) != 1:
            raise data.DataError(f"{name} dimension differs between episodes: {sorted(dims)} in {src}")
    keep, dropped = _finite_frames(jobs, lows, drop_nonfinite)
    if dropped:
        print(f"dropped {dropped} frames with non-finite state or actions (--drop_nonfinite)")
    jobs, lows, keep = zip(*[(j, low, k) for j, low, k in zip(jobs, lows, keep) if k.any()])  # episodes left
    os.makedirs(out, exist_ok=True)
    if os.path.exists(os.path.join(out, "meta.json")):
        os.remove(os.path.join(out, "meta.json"))  # an interrupted run must not look complete
    lengths = np.array([int(k.sum()) for k in keep], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    n_frames, S = int(starts[-1]), image_size
    for c in range(len(keys["cams"])):
        np.lib.format.open_memmap(os.path.join(out, f"images_{c}.npy"), "w+", np.uint8, (n_frames, 3, S, S)).flush()
    for k, (j, low, kp) in enumerate(zip(jobs, lows, keep)):
        j.update(start=int(starts[k]), out=out, image_size=S, keep=kp, times=low[3])
    workers = min(os.cpu_count() if workers is None else workers, len(jobs))  # a spawned worker imports torch
    bar = tqdm(total=n_frames, desc="prepare", unit="frame", smoothing=0.05)
    if workers > 1:
        import multiprocessing as mp
        # spawn: a forked worker inherits the caller's threads' locks (tqdm's monitor, OpenMP, video decoders)
        # and can hang on one; the CI saw a pool of forked workers that never finished
        with mp.get_context("spawn").Pool(workers) as pool:
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
        raise data.DataError(f"task_index values {sorted(unknown)} are not in the dataset's task table ({src}/meta)")
    task = np.array([remap[t] for t in task.tolist()], np.int32)
    meta = dict(format=1, source=os.path.abspath(src), codebase_version=info.get("codebase_version"),
                cameras=keys["names"], camera_keys=keys["cams"], wrist=keys["wrist"], state_key=keys["state"],
                action_key=keys["actions"], image_size=S, fps=float(info["fps"]), episode_index=[j["episode"] for j in jobs],
                dropped_frames=dropped,
                tokenizer="words" if words else os.path.abspath(tokenizer) if isinstance(tokenizer, (str, os.PathLike)) else type(tok).__name__,
                vocab_size=int(tok.get_piece_size()) if hasattr(tok, "get_piece_size") else len(tok.vocab))
    if words:
        meta["vocab"] = tok.vocab
    return data.write_prepared(out, meta, state, actions, starts, task, [tasks[t] for t in order], tok, max_token_len, stats)

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
    st = data.load_stats(stats)["state"] if stats else data.compute_stats(np.concatenate([low[0] for low in lows]))
    s0, task = lows[0][0][0], tasks[int(lows[0][2][0])]
    nstate = data.normalize(s0, np.asarray(st["q01"], np.float32), np.asarray(st["q99"], np.float32))
    tok = (data.word_tokenizer(tasks.values()) if tokenizer == "words" else
           data.load_tokenizer(tokenizer) if isinstance(tokenizer, (str, os.PathLike)) else tokenizer)
    for fmt, state in (("pi05", nstate), ("pi0", None)):
        n = f", {len(data.encode_prompt(tok, task, state))} tokens" if tok else ""
        out(f"prompt of frame 0 ({fmt}){n}: {data.format_prompt(task, state)!r}")
    if tok:
        long = [t for t in tasks.values() if len(data.encode_prompt(tok, t)) > max_token_len]
        out(f"{len(long)} of {len(tasks)} tasks exceed max_token_len={max_token_len} in the pi0 format")
    return dict(info=info, keys=keys, episodes=len(jobs), tasks=tasks)

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
    for flag in ("max_token_len", "image_size", "workers"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            p.error(f"--{flag}={getattr(args, flag)}: expected a positive int")
    if args.tokenizer not in (None, "words") and not os.path.isfile(args.tokenizer):
        p.error(f"--tokenizer={args.tokenizer}: no such file; pass the PaliGemma SentencePiece model (tokenizer.model) "
                f"or 'words'")
    if args.stats is not None and not os.path.isfile(args.stats):
        p.error(f"--stats={args.stats}: no such file (a stats.json or openpi norm_stats.json)")
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
    except data.DataError as err:
        raise SystemExit(f"prepare.py: {err}")
    print(f"wrote {args.out}: {meta['num_episodes']} episodes, {meta['num_frames']} frames, cameras {meta['cameras']} "
          f"(wrist {meta['wrist']}), {len(meta['tasks'])} tasks, longest prompt pi05 {meta['max_prompt_len_pi05']} / pi0 "
          f"{meta['max_prompt_len_pi0']} tokens, {time.time() - t0:.1f}s")

if __name__ == "__main__":
    main(sys.argv[1:])
