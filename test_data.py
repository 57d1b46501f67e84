"""
Tests for prepare.py and data.py: LeRobot preparation (v2 parquet images, v2 mp4, v3), prompts, normalization, the loader,
augmentation and the synthetic dataset. Everything is generated here; CPU only.

    python -m pytest -q test_data.py
"""

import io
import itertools
import json
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import data
import prepare
import sim

TASKS = ["pick up the black bowl and place it on the plate", "open_the top drawer\n", "turn on the stove"]
H_IMG, W_IMG, S = 40, 56, 32  # non-square source frames -> resize_with_pad to 32x32

# -----------------------------------------------------------------------------
# helpers: a tiny SentencePiece model and hand-written LeRobot datasets

@pytest.fixture(scope="module")
def spm_path(tmp_path_factory):
    spm = pytest.importorskip("sentencepiece")  # preparation-only dependencies may be absent (GPU image)
    sents = [data.clean_text(t) for t in TASKS] + ["Task: move the bowl, State: 12 255 -1 0 7 128;\nAction: "]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sents * 20), model_writer=buf, vocab_size=400,
                                   hard_vocab_limit=False, pad_id=0, eos_id=1, bos_id=2, unk_id=3,
                                   normalization_rule_name="identity", remove_extra_whitespaces=False,
                                   user_defined_symbols=["\n"], byte_fallback=True, minloglevel=2)
    path = tmp_path_factory.mktemp("spm") / "tiny.model"
    path.write_bytes(buf.getvalue())
    return str(path)

def frame_image(e, f, cam):
    """smooth picture with a bright block whose position encodes the frame (video codecs keep it)."""
    yy, xx = np.mgrid[0:H_IMG, 0:W_IMG]
    img = np.stack([40 + 3 * xx, 40 + 4 * yy, np.full_like(xx, 60 + 40 * e + 20 * cam)], -1)
    x0 = 4 + 7 * f
    img[8:24, x0:x0 + 8] = (250, 250, 250)
    return img.clip(0, 255).astype(np.uint8)

def png(img):
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    return buf.getvalue()

def write_mp4(path, frames, fps=10):
    av = pytest.importorskip("av")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with av.open(path, "w") as c:
        st = c.add_stream("libx264", rate=fps, options={"crf": "12", "g": "4"})
        st.width, st.height, st.pix_fmt = frames[0].shape[1], frames[0].shape[0], "yuv420p"
        for fr in frames:
            c.mux(st.encode(av.VideoFrame.from_ndarray(fr, format="rgb24")))
        c.mux(st.encode())

def ref_resize_with_pad(img, size):
    from PIL import Image
    h, w = img.shape[:2]
    ratio = max(w / size, h / size)
    nh, nw = int(h / ratio), int(w / ratio)
    out = np.zeros((size, size, 3), np.uint8)
    top, left = (size - nh) // 2, (size - nw) // 2
    out[top:top + nh, left:left + nw] = np.asarray(Image.fromarray(img).resize((nw, nh), Image.BILINEAR))
    return out

def write_lerobot(root, lengths, tasks_of, version="v2.1", kind="image", cam_keys=("image", "wrist_image"),
                  state_key="state", action_key="actions", corrupt=None, short_video=None, bad_shape=None,
                  nan_at=None):
    """a LeRobot dataset with the given episode lengths; returns the raw per-frame data for comparison.
    kind: 'image' (PNG bytes in parquet), 'video' (mp4 per episode / per file), or a list per camera."""
    pytest.importorskip("PIL")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    kinds = [kind] * len(cam_keys) if isinstance(kind, str) else list(kind)
    os.makedirs(os.path.join(root, "meta"), exist_ok=True)
    rng = np.random.default_rng(len(lengths))
    n = sum(lengths)
    state = rng.normal(size=(n, 8)).astype(np.float32)
    actions = rng.normal(size=(n, 7)).astype(np.float32)
    imgs = {c: [] for c in range(len(cam_keys))}
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    if nan_at is not None:  # (episode, frame): one NaN action value
        actions[starts[nan_at[0]] + nan_at[1], 3] = np.nan
    feats = {state_key: {"dtype": "float32", "shape": [8]}, action_key: {"dtype": "float32", "shape": [7]},
             "timestamp": {"dtype": "float32", "shape": [1]}, "task_index": {"dtype": "int64", "shape": [1]}}
    for k, kd in zip(cam_keys, kinds):
        feats[k] = {"dtype": kd, "shape": [H_IMG, W_IMG, 3], "names": ["height", "width", "channel"]}
    tables = []
    for e, T in enumerate(lengths):
        cols = {"timestamp": pa.array(np.arange(T, dtype=np.float32) / 10), "frame_index": pa.array(np.arange(T)),
                "episode_index": pa.array(np.full(T, e)), "index": pa.array(np.arange(starts[e], starts[e + 1])),
                "task_index": pa.array(np.full(T, tasks_of[e]))}
        vec = pa.list_(pa.float32()) if version.startswith("v2") else pa.list_(pa.float32(), 8)
        cols[state_key] = pa.array(list(state[starts[e]:starts[e + 1]]), type=vec)
        vec = pa.list_(pa.float32()) if version.startswith("v2") else pa.list_(pa.float32(), 7)
        cols[action_key] = pa.array(list(actions[starts[e]:starts[e + 1]]), type=vec)
        for c, (k, kd) in enumerate(zip(cam_keys, kinds)):
            frames = [frame_image(e, f, c) for f in range(T)]
            imgs[c] += frames
            if kd == "image":
                cells = [{"bytes": png(im), "path": f"frame_{f}.png"} for f, im in enumerate(frames)]
                if corrupt == (e, f := 2) and c == 0:
                    cells[f]["bytes"] = b"\x89PNG\r\n\x1a\n this is not a png"
                if bad_shape == (e, 1) and c == 0:
                    cells[1]["bytes"] = png(np.zeros((H_IMG, W_IMG + 2, 3), np.uint8))
                cols[k] = pa.array(cells, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
        tables.append(pa.table(cols))
    if version.startswith("v2"):
        info = {"codebase_version": version, "fps": 10, "chunks_size": 1000, "total_episodes": len(lengths),
                "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
                "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
                "features": feats}
        for e, t in enumerate(tables):
            p = os.path.join(root, info["data_path"].format(episode_chunk=0, episode_index=e))
            os.makedirs(os.path.dirname(p), exist_ok=True)
            pq.write_table(t, p)
            for c, (k, kd) in enumerate(zip(cam_keys, kinds)):
                if kd == "video":
                    frames = imgs[c][starts[e]:starts[e + 1]]
                    if short_video == e and c == 0:
                        frames = frames[:-2]
                    write_mp4(os.path.join(root, info["video_path"].format(episode_chunk=0, video_key=k,
                                                                           episode_index=e)), frames)
        with open(os.path.join(root, "meta", "tasks.jsonl"), "w") as f:
            for i, t in enumerate(TASKS):
                f.write(json.dumps({"task_index": i, "task": t}) + "\n")
        with open(os.path.join(root, "meta", "episodes.jsonl"), "w") as f:
            for e, T in enumerate(lengths):
                f.write(json.dumps({"episode_index": e, "tasks": [TASKS[tasks_of[e]]], "length": T}) + "\n")
    else:  # v3.0: one data file, one video file per camera holding every episode
        info = {"codebase_version": "v3.0", "fps": 10, "chunks_size": 1000,
                "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
                "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
                "features": feats}
        p = os.path.join(root, "data", "chunk-000", "file-000.parquet")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        pq.write_table(pa.concat_tables(tables), p, row_group_size=4)
        rows = []
        for e, T in enumerate(lengths):
            r = {"episode_index": e, "tasks": [TASKS[tasks_of[e]]], "length": T, "data/chunk_index": 0,
                 "data/file_index": 0, "dataset_from_index": int(starts[e]), "dataset_to_index": int(starts[e + 1])}
            for k, kd in zip(cam_keys, kinds):
                if kd == "video":
                    r.update({f"videos/{k}/chunk_index": 0, f"videos/{k}/file_index": 0,
                              f"videos/{k}/from_timestamp": starts[e] / 10, f"videos/{k}/to_timestamp": starts[e + 1] / 10})
            rows.append(r)
        os.makedirs(os.path.join(root, "meta", "episodes", "chunk-000"))
        pq.write_table(pa.Table.from_pylist(rows), os.path.join(root, "meta", "episodes", "chunk-000", "file-000.parquet"))
        # pandas writes the task strings as its index column
        pq.write_table(pa.table({"task_index": list(range(len(TASKS))), "__index_level_0__": TASKS}),
                       os.path.join(root, "meta", "tasks.parquet"))
        for c, (k, kd) in enumerate(zip(cam_keys, kinds)):
            if kd == "video":
                write_mp4(os.path.join(root, info["video_path"].format(video_key=k, chunk_index=0, file_index=0)), imgs[c])
    with open(os.path.join(root, "meta", "info.json"), "w") as f:
        json.dump(info, f)
    return {"state": state, "actions": actions, "images": imgs, "starts": starts}

# -----------------------------------------------------------------------------
# preparation

LENGTHS, TASKS_OF = [5, 3, 6], [0, 2, 1]

@pytest.fixture(scope="module")
def v2_png(tmp_path_factory, spm_path):
    src, out = tmp_path_factory.mktemp("v2src"), tmp_path_factory.mktemp("v2out")
    raw = write_lerobot(str(src), LENGTHS, TASKS_OF)
    meta = prepare.prepare(str(src), str(out), spm_path, image_size=S, max_token_len=128, workers=2)
    return raw, meta, str(out)

def test_prepare_v2_png_matches_direct_resize_with_pad(v2_png):
    raw, meta, out = v2_png
    assert meta["num_frames"] == sum(LENGTHS) and meta["num_episodes"] == 3, meta
    assert meta["wrist"] == [False, True] and meta["image_size"] == S and meta["fps"] == 10
    for c in range(2):
        got = np.load(os.path.join(out, f"images_{c}.npy"))
        assert got.shape == (sum(LENGTHS), 3, S, S) and got.dtype == np.uint8, (got.shape, got.dtype)
        want = np.stack([ref_resize_with_pad(im, S).transpose(2, 0, 1) for im in raw["images"][c]])
        diff = np.abs(got.astype(int) - want).max()
        assert diff == 0, f"camera {c}: max pixel diff {diff} vs PIL resize_with_pad"
    # 40x56 -> 22x32 content, 5 black rows on top and 5 below
    assert got[:, :, :5].max() == 0 and got[:, :, -5:].max() == 0 and got[:, :, 5].min() > 0


def test_prepare_v2_low_dim_episodes_tasks_and_stats(v2_png):
    raw, meta, out = v2_png
    np.testing.assert_array_equal(np.load(os.path.join(out, "state.npy")), raw["state"])
    np.testing.assert_array_equal(np.load(os.path.join(out, "actions.npy")), raw["actions"])
    np.testing.assert_array_equal(np.load(os.path.join(out, "episode_starts.npy")), raw["starts"])
    assert meta["tasks"] == TASKS, meta["tasks"]
    want_task = np.repeat(TASKS_OF, LENGTHS)
    np.testing.assert_array_equal(np.load(os.path.join(out, "task_index.npy")), want_task)
    stats = data.load_stats(out)
    for k in ("state", "actions"):
        x = raw[k].astype(np.float64)
        np.testing.assert_allclose(stats[k]["q01"], np.quantile(x, 0.01, axis=0), rtol=1e-6)
        np.testing.assert_allclose(stats[k]["q99"], np.quantile(x, 0.99, axis=0), rtol=1e-6)
        np.testing.assert_allclose(stats[k]["mean"], x.mean(0), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(stats[k]["std"], x.std(0), rtol=1e-5)

def test_prepare_v2_tokens_both_formats(v2_png, spm_path):
    raw, meta, out = v2_png
    sp = data.load_tokenizer(spm_path)
    stats = data.load_stats(out)
    tok05, len05 = np.load(os.path.join(out, "tokens_pi05.npy")), np.load(os.path.join(out, "tokens_pi05_len.npy"))
    task = np.load(os.path.join(out, "task_index.npy"))
    for i in range(meta["num_frames"]):
        s = (raw["state"][i] - stats["state"]["q01"]) / (stats["state"]["q99"] - stats["state"]["q01"] + 1e-6) * 2 - 1
        bins = " ".join(str(b) for b in np.digitize(s, np.linspace(-1, 1, 257)[:-1]) - 1)
        text = data.clean_text(TASKS[task[i]])
        want = sp.encode(f"Task: {text}, State: {bins};\nAction: ", add_bos=True)
        assert len05[i] == len(want) and tok05[i, :len(want)].tolist() == want, (i, tok05[i].tolist(), want)
        assert not tok05[i, len(want):].any(), "padding must be 0"
    tok0, len0 = np.load(os.path.join(out, "tokens_pi0.npy")), np.load(os.path.join(out, "tokens_pi0_len.npy"))
    for t, task_text in enumerate(TASKS):
        want = sp.encode(data.clean_text(task_text), add_bos=True) + sp.encode("\n")
        assert tok0[t, :len0[t]].tolist() == want and want[0] == 2, (tok0[t].tolist(), want)

def test_prepare_v2_video_decodes_frames(tmp_path, spm_path):
    raw = write_lerobot(str(tmp_path / "src"), [4, 6], [0, 1], kind="video")
    meta = prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, image_size=S, workers=1)
    for c in range(2):
        got = np.load(tmp_path / "out" / f"images_{c}.npy").astype(float)
        want = np.stack([ref_resize_with_pad(im, S).transpose(2, 0, 1) for im in raw["images"][c]]).astype(float)
        err = np.abs(got - want).mean(axis=(1, 2, 3))
        # a neighbouring frame (block moved by 7 px) must be clearly worse: catches off-by-one frame picks
        shifted = np.abs(got[1:] - want[:-1]).mean(axis=(1, 2, 3))
        assert err.max() < 4, f"camera {c}: mean abs error per frame {err.round(2)} (video is lossy)"
        assert shifted.min() > 2 * err.max(), f"camera {c}: wrong-frame error {shifted.round(2)} vs {err.round(2)}"
    assert meta["num_frames"] == 10

def test_prepare_v3_video_and_image_prefixed_keys(tmp_path, spm_path):
    keys = ("observation.images.top", "observation.images.wrist")
    raw = write_lerobot(str(tmp_path / "src"), [4, 5, 3], [1, 0, 2], version="v3.0", kind=["video", "image"],
                        cam_keys=keys, state_key="observation.state", action_key="action")
    # bare names are resolved to the prefixed LeRobot keys
    meta = prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, cameras=["top", "wrist"],
                        action_key="action", image_size=S, workers=2)
    assert meta["camera_keys"] == list(keys) and meta["wrist"] == [False, True], meta
    assert meta["tasks"] == TASKS
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "task_index.npy"), np.repeat([1, 0, 2], [4, 5, 3]))
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "state.npy"), raw["state"])
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "actions.npy"), raw["actions"])
    want = [np.stack([ref_resize_with_pad(im, S).transpose(2, 0, 1) for im in raw["images"][c]]) for c in range(2)]
    got = [np.load(tmp_path / "out" / f"images_{c}.npy") for c in range(2)]
    assert np.array_equal(got[1], want[1]), "parquet images must be exact"
    err = np.abs(got[0].astype(float) - want[0]).mean(axis=(1, 2, 3))
    assert err.max() < 4, f"video frames of episodes 1 and 2 come from the middle of the file: errors {err.round(2)}"

def test_prepare_with_given_stats(tmp_path, spm_path):
    raw = write_lerobot(str(tmp_path / "src"), [3, 2], [0, 1])
    given = {"state": {"mean": [0.0] * 8, "std": [1.0] * 8, "q01": [-2.0] * 8, "q99": [2.0] * 8},
             "actions": {"mean": [0.0] * 7, "std": [1.0] * 7, "q01": [-3.0] * 7, "q99": [1.0] * 7}}
    (tmp_path / "norm_stats.json").write_text(json.dumps({"norm_stats": given}))
    prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, image_size=S, max_token_len=128,
                 workers=1, stats=str(tmp_path / "norm_stats.json"))
    stats = data.load_stats(str(tmp_path / "out"))
    assert stats["actions"]["q01"].tolist() == [-3.0] * 7 and stats["state"]["q99"].tolist() == [2.0] * 8, stats
    sp = data.load_tokenizer(spm_path)
    want = data.encode_prompt(sp, TASKS[0], (raw["state"][0] + 2) / (4 + 1e-6) * 2 - 1)
    got = np.load(tmp_path / "out" / "tokens_pi05.npy")[0]
    assert got[:len(want)].tolist() == want and not got[len(want):].any(), "pi05 prompts must use the given stats"
    given["state"]["q01"] = [0.0] * 5
    (tmp_path / "bad.json").write_text(json.dumps(given))
    with pytest.raises(ValueError, match="given stats for 'state' do not match the data's 8 dims"):
        prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out2"), spm_path, image_size=S, stats=str(tmp_path / "bad.json"))

def test_corrupt_png_names_episode_and_frame(tmp_path, spm_path):
    write_lerobot(str(tmp_path / "src"), [4, 4], [0, 1], corrupt=(1, 2))
    with pytest.raises(ValueError, match=r"episode 1 frame 2: camera 'image': cannot decode"):
        prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, image_size=S, workers=2)
    assert not os.path.exists(tmp_path / "out" / "meta.json"), "a failed preparation must not look complete"

def test_wrong_image_shape_names_episode_and_frame(tmp_path, spm_path):
    write_lerobot(str(tmp_path / "src"), [3, 3], [0, 1], bad_shape=(0, 1))
    with pytest.raises(ValueError, match=r"episode 0 frame 1: camera 'image' image has shape \(40, 58, 3\)"):
        prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, image_size=S, workers=1)

def test_missing_key_lists_available(tmp_path, spm_path):
    write_lerobot(str(tmp_path / "src"), [3], [0])
    with pytest.raises(data.DataError, match=r"camera key 'left_wrist'.*available.*wrist_image"):
        prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, cameras=["image", "left_wrist"])
    with pytest.raises(data.DataError, match=r"action key 'action'.*available.*actions"):
        prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, action_key="action")

def test_empty_episode_is_an_error(tmp_path, spm_path):
    write_lerobot(str(tmp_path / "src"), [3, 0, 2], [0, 1, 2])
    with pytest.raises(ValueError, match=r"episode 1: empty episode"):
        prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, image_size=S)

def test_video_shorter_than_parquet_names_frame(tmp_path, spm_path):
    write_lerobot(str(tmp_path / "src"), [3, 5], [0, 1], kind="video", short_video=1)
    with pytest.raises(ValueError, match=r"episode 1 frame 3: camera 'image': no video frame"):
        prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, image_size=S, workers=1)

# -----------------------------------------------------------------------------
# LeRobot's own naming with default flags, and the mistakes users make

LEROBOT_KEYS = dict(cam_keys=("observation.images.image", "observation.images.wrist_image"),
                    state_key="observation.state", action_key="action")

@pytest.mark.parametrize("kind", ["video", "image"])
def test_lerobot_convention_prepares_with_default_flags(tmp_path, spm_path, kind):
    """a v3.0 dataset named as LeRobotDataset.create names it (observation.images.*, observation.state, action),
    prepared through the command line with only --src/--out/--tokenizer."""
    raw = write_lerobot(str(tmp_path / "src"), [4, 5, 3], [1, 0, 2], version="v3.0", kind=kind, **LEROBOT_KEYS)
    prepare.main([f"--src={tmp_path / 'src'}", f"--out={tmp_path / 'out'}", f"--tokenizer={spm_path}",
               f"--image_size={S}", "--workers=1"])
    meta = json.load(open(tmp_path / "out" / "meta.json"))
    assert meta["cameras"] == ["image", "wrist_image"] and meta["wrist"] == [False, True], meta
    assert (meta["state_key"], meta["action_key"]) == ("observation.state", "action"), meta
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "state.npy"), raw["state"])
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "actions.npy"), raw["actions"])
    for c in range(2):
        got = np.load(tmp_path / "out" / f"images_{c}.npy").astype(float)
        want = np.stack([ref_resize_with_pad(im, S).transpose(2, 0, 1) for im in raw["images"][c]])
        err = np.abs(got - want).mean(axis=(1, 2, 3))
        assert err.max() < (4 if kind == "video" else 1e-9), f"camera {c}: per-frame error {err.round(2)}"

def test_prepare_flags_are_checked_before_any_frame_is_read(tmp_path, spm_path, capsys):
    src = tmp_path / "src"
    write_lerobot(str(src), [3], [0], version="v3.0", kind="image", **LEROBOT_KEYS)
    junk = tmp_path / "junk.model"
    junk.write_bytes(b"not a model")
    common = [f"--src={src}", f"--out={tmp_path / 'out'}"]
    for args, want in (([f"--tokenizer={tmp_path / 'none.model'}"], "--tokenizer=" + str(tmp_path / "none.model") + ": no such file"),
                       ([f"--tokenizer={spm_path}", f"--stats={tmp_path / 'none.json'}"], ": no such file (a stats.json"),
                       ([f"--tokenizer={spm_path}", "--image_size=0"], "--image_size=0: expected a positive int")):
        with pytest.raises(SystemExit):
            prepare.main(common + args)
        assert want in capsys.readouterr().err
    with pytest.raises(SystemExit, match=f"prepare.py: {junk}: not a readable SentencePiece model"):
        prepare.main(common + [f"--tokenizer={junk}"])
    assert not (tmp_path / "out").exists()

def test_feature_selection_names_the_flag_when_ambiguous_or_missing():
    cam = {"dtype": "video", "shape": [8, 8, 3]}
    vec = {"dtype": "float32", "shape": [7]}
    feats = {"observation.images.top": cam, "observation.images.wrist": cam, "observation.state": vec, "action": vec}
    got = prepare.select_features(feats)
    assert got == dict(cams=["observation.images.top", "observation.images.wrist"], names=["top", "wrist"],
                       wrist=[False, True], state="observation.state", actions="action"), got
    assert prepare.select_features(feats, wrist=["top"])["wrist"] == [True, False], "--wrist overrides the name rule"
    assert prepare.select_features(feats, wrist=[])["wrist"] == [False, False]
    assert prepare.select_features(feats, cameras=["wrist"])["cams"] == ["observation.images.wrist"], "a flag wins"
    with pytest.raises(data.DataError, match=r"ambiguous action: the dataset has both \['action', 'actions'\]; pass --action_key="):
        prepare.select_features(dict(feats, actions=vec))
    assert prepare.select_features(dict(feats, actions=vec), action_key="actions")["actions"] == "actions"
    with pytest.raises(data.DataError, match=r"no state feature .*'observation.state', 'state'.*pass --state_key="):
        prepare.select_features({k: v for k, v in feats.items() if k != "observation.state"})
    with pytest.raises(data.DataError, match=r"no image or video features .*pass --cameras="):
        prepare.select_features({"state": vec, "action": vec})
    with pytest.raises(data.DataError, match=r"--wrist names \['side'\], which are not among the cameras"):
        prepare.select_features(feats, wrist=["side"])

def test_inspect_prints_the_plan_and_writes_nothing(tmp_path, spm_path, capsys):
    write_lerobot(str(tmp_path / "src"), [4, 3], [0, 1], version="v3.0", kind="video", **LEROBOT_KEYS)
    before = sorted(p for p, _, _ in os.walk(tmp_path))
    prepare.main([f"--src={tmp_path / 'src'}", "--inspect", f"--tokenizer={spm_path}"])
    out = capsys.readouterr().out
    assert "2 episodes, 7 frames" in out and "3 tasks" in out, out
    assert "camera 0 'image'" in out and "camera 1 'wrist_image' (wrist)" in out, out
    assert "observation.state" in out and "action " in out and " actions" in out, out
    assert "prompt of frame 0 (pi05)" in out and "'Task: pick up the black bowl and place it on the plate, State: " in out, out
    assert "prompt of frame 0 (pi0)" in out and "tokens" in out, out
    assert sorted(p for p, _, _ in os.walk(tmp_path)) == before, "--inspect must not write anything"

def test_non_finite_action_names_episode_and_frame_or_is_dropped(tmp_path, spm_path, capsys):
    raw = write_lerobot(str(tmp_path / "src"), [4, 5], [0, 1], nan_at=(1, 2))
    with pytest.raises(data.DataError, match=r"episode 1 frame 2: non-finite action .*nan.* \(1 such frames in 1 episodes\).*--drop_nonfinite"):
        prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, image_size=S, workers=1)
    assert not os.path.exists(tmp_path / "out"), "the check runs before anything is written"
    meta = prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, image_size=S, workers=1, drop_nonfinite=True)
    assert "dropped 1 frames with non-finite state or actions" in capsys.readouterr().out
    keep = np.ones(9, bool)
    keep[4 + 2] = False
    assert meta["num_frames"] == 8 and meta["dropped_frames"] == 1, meta
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "actions.npy"), raw["actions"][keep])
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "episode_starts.npy"), [0, 4, 8])
    want = np.stack([ref_resize_with_pad(im, S).transpose(2, 0, 1) for im in np.array(raw["images"][0])[keep]])
    assert np.array_equal(np.load(tmp_path / "out" / "images_0.npy"), want), "frames after the dropped one shift up"

def test_prompts_cut_by_max_token_len_are_reported(tmp_path, spm_path, capsys):
    write_lerobot(str(tmp_path / "src"), [3, 2], [0, 1])
    meta = prepare.prepare(str(tmp_path / "src"), str(tmp_path / "out"), spm_path, image_size=S, workers=1, max_token_len=12)
    sp = data.load_tokenizer(spm_path)
    long = sum(len(data.encode_prompt(sp, t)) > 12 for t in meta["tasks"])
    assert 0 < long and meta["cut_prompts_pi0"] == long and meta["cut_prompts_pi05"] == 5, meta
    out = capsys.readouterr().out
    assert f"{long} of 3 task prompts (pi0 format) and 5 of 5 frame prompts (pi05 format" in out, out
    assert "prepare with a larger --max_token_len" in out, out

@pytest.fixture
def prepared_copy(syn, tmp_path):
    import shutil
    shutil.copytree(syn, tmp_path / "d")
    return tmp_path / "d"

def test_check_prepared_names_the_damaged_file(prepared_copy):
    d = prepared_copy
    assert data.check_prepared(str(d))["num_frames"] > 0
    with open(d / "images_0.npy", "r+b") as f:  # truncated
        f.truncate(os.path.getsize(d / "images_0.npy") - 100)
    with pytest.raises(data.DataError, match=r"images_0\.npy is \d+ bytes where its header implies \d+ .*python sim.py synthetic"):
        data.check_prepared(str(d))
    np.save(d / "images_0.npy", np.zeros((1,), object), allow_pickle=True)  # garbled: other content
    with pytest.raises(data.DataError, match=r"images_0\.npy holds object \(1,\) where meta.json implies uint8"):
        data.check_prepared(str(d))
    (d / "images_0.npy").write_bytes(b"not an npy file at all")
    with pytest.raises(data.DataError, match=r"images_0\.npy is not a readable \.npy file"):
        data.check_prepared(str(d))

def test_check_prepared_names_missing_dirs_and_broken_stats(prepared_copy, tmp_path):
    with pytest.raises(data.DataError, match=r"data_dir '.*nowhere' does not exist: prepare a dataset first \(python prepare.py --src="):
        data.check_prepared(str(tmp_path / "nowhere"))
    (prepared_copy / "stats.json").write_text('{"norm_stats": {"state": {"q01": [0, 1]')
    with pytest.raises(data.DataError, match=r"stats\.json is not a valid stats file \(JSONDecodeError"):
        data.check_prepared(str(prepared_copy))
    os.remove(prepared_copy / "meta.json")
    with pytest.raises(data.DataError, match=r"meta\.json not found: .* is not a prepared dataset"):
        data.check_prepared(str(prepared_copy))

def test_check_against_model_lists_every_mismatch(syn):
    import model as M
    from dataclasses import replace
    meta = dict(data.check_prepared(syn), vocab_size=300_000, state_dim=40)
    problems = data.check_against_model(meta, replace(M.configs["demo"], max_token_len=8, camera_slots=1), "pi05", syn)
    text = "\n".join(problems)
    assert len(problems) == 5, text
    for want in ("300000 tokens, more than the model's embedding (1024)", "images are 16x16, the model takes 64x64: "
                 "prepare with --image_size=64", "2 cameras ['image', 'wrist_image'], the model has 1 camera slots",
                 "states have 40 dims, the model takes at most 32", "prompt slots: set --max_token_len="):
        assert want in text, f"{want!r} not in:\n{text}"
    assert data.check_against_model(data.check_prepared(syn), replace(M.configs["demo"], image_size=16), "pi05") == []

# -----------------------------------------------------------------------------
# prompts and normalization

def test_state_bins_hand_computed():
    x = np.array([-1, -0.99, 0, 0.999, 1, 1.5, -1.2, 1 - 1 / 128, -1 + 1 / 128 - 1e-6])
    want = [0, 1, 128, 255, 255, 255, -1, 255, 0]
    got = data.discretize_state(x).tolist()
    assert got == want, f"{got} != {want}"

def test_prompt_strings_exact():
    task = "  pick_up the\nbowl "
    assert data.format_prompt(task) == "pick up the bowl"
    got = data.format_prompt(task, np.array([-1, -0.99, 0, 0.999, 1, 1.5, -1.2]))
    assert got == "Task: pick up the bowl, State: 0 1 128 255 255 255 -1;\nAction: ", repr(got)

def test_encoded_prompt_formats(spm_path):
    sp = data.load_tokenizer(spm_path)
    ids = data.encode_prompt(sp, "open_the top drawer\n")
    assert ids == sp.encode("open the top drawer", add_bos=True) + sp.encode("\n"), ids
    ids = data.encode_prompt(sp, "open the top drawer", np.array([0.0, 0.5]))
    want = sp.encode("Task: open the top drawer, State: 128 192;\nAction: ", add_bos=True)
    assert ids == want and want[0] == 2, (ids, want)

def test_normalize_formula_and_round_trip():
    q01, q99 = np.array([0.0, -2.0], np.float32), np.array([1.0, 2.0], np.float32)
    x = np.array([[0.0, -2.0], [0.5, 0.0], [1.0, 3.0]], np.float32)
    got = data.normalize(x, q01, q99)
    want = np.array([[-1, -1], [0.5 / (1 + 1e-6) * 2 - 1, 2 / (4 + 1e-6) * 2 - 1], [1 / (1 + 1e-6) * 2 - 1, 5 / (4 + 1e-6) * 2 - 1]])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    assert got[2, 1] > 1.4, "no clipping"
    padded = data.pad_to_dim(got, 32)
    assert padded.shape == (3, 32) and not padded[:, 2:].any()
    padded[:, 2:] = 7.0  # extra dims pass through the inverse
    back = data.unnormalize(padded, q01, q99)
    np.testing.assert_allclose(back[:, :2], x, atol=1e-5)
    assert (back[:, 2:] == 7).all()
    t = data.unnormalize(torch.from_numpy(padded), q01, q99)
    assert torch.is_tensor(t) and torch.allclose(t, torch.from_numpy(back), atol=1e-6)

# -----------------------------------------------------------------------------
# loader (on a small synthetic dataset)

@pytest.fixture(scope="module")
def syn(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("syn"))
    sim.make_synthetic(out, episodes=40, image_size=16, seed=1)
    return out

def batches_equal(a, b):
    return all(torch.equal(x[k], y[k]) for x, y in zip(a, b) for k in x)

def test_loader_deterministic_from_seed(syn):
    kw = dict(micro_batch=4, grad_accum=2, seed=3, horizon=5, prefetch=0)
    a, b = data.Loader(syn, **kw), data.Loader(syn, **kw)
    for _ in range(3):
        assert batches_equal(a.next(), b.next())
    c = data.Loader(syn, **{**kw, "seed": 4})
    assert not np.array_equal(a.indices(0), c.indices(0)), "another seed must shuffle differently"

def test_rank_slices_are_disjoint_and_union_is_global_batch(syn):
    single = data.Loader(syn, micro_batch=3, grad_accum=4, seed=0, prefetch=0).get(5)
    want = {k: torch.cat([m[k] for m in single]) for k in single[0]}
    assert want["sample_id"].tolist() == list(range(12))
    # layout: rank-major, then micro-step (rank r, micro-step m holds sample_ids (r*grad_accum + m)*B + [0, B))
    r1 = data.Loader(syn, micro_batch=3, grad_accum=2, rank=1, world_size=2, seed=0, prefetch=0).get(5)
    assert [m["sample_id"].tolist() for m in r1] == [[6, 7, 8], [9, 10, 11]], [m["sample_id"] for m in r1]
    got = {}
    for r in range(2):
        for m in data.Loader(syn, micro_batch=3, grad_accum=2, rank=r, world_size=2, seed=0, prefetch=0).get(5):
            for j, sid in enumerate(m["sample_id"].tolist()):
                assert sid not in got, f"sample_id {sid} on two ranks"
                got[sid] = {k: v[j] for k, v in m.items()}
    assert sorted(got) == list(range(12))
    for sid, sample in got.items():
        for k, v in sample.items():
            assert torch.equal(v, want[k][sid]), f"sample {sid} key {k} differs from the single-process batch"

def test_resume_matches_uninterrupted(syn):
    kw = dict(micro_batch=4, grad_accum=1, seed=0, horizon=3, prefetch=2)
    full = data.Loader(syn, **{**kw, "prefetch": 0})  # synchronous reference for the threaded loaders
    run = [full.next() for _ in range(6)]
    part = data.Loader(syn, **kw)
    part.next(), part.next()
    sd = part.state_dict()
    assert sd == {"step": 2}, sd
    resumed = data.Loader(syn, **kw, start_step=sd["step"])  # as train.py resumes it
    for s in range(2, 6):
        assert batches_equal(resumed.next(), run[s]), f"step {s} differs after resume"
    assert batches_equal(data.Loader(syn, **kw, start_step=4).next(), run[4])
    assert full.wait_time >= full.last_wait >= 0
    for ld in (full, part, resumed):
        ld.close()

def test_every_train_frame_once_per_epoch_across_step_boundaries(syn):
    ld = data.Loader(syn, micro_batch=7, grad_accum=1, seed=0, prefetch=0)  # 7 does not divide N
    N = len(ld.frames)
    stream = np.concatenate([ld.indices(s) for s in range(2 * N // 7 + 2)])
    for e in range(2):
        ep = np.sort(stream[e * N:(e + 1) * N])
        assert np.array_equal(ep, ld.frames), f"epoch {e} is not a permutation of the train frames"
    assert not np.array_equal(stream[:N], stream[N:2 * N]), "each epoch needs its own permutation"

def test_split_by_episode(syn):
    tr = data.Loader(syn, split="train", micro_batch=2, prefetch=0, val_fraction=0.1)
    va = data.Loader(syn, split="val", micro_batch=2, prefetch=0, val_fraction=0.1)
    assert len(va.episodes) == 4 and not set(tr.episodes) & set(va.episodes), (tr.episodes, va.episodes)
    assert len(tr.frames) + len(va.frames) == tr.meta["num_frames"] and not set(tr.frames) & set(va.frames)

def test_action_chunk_mask_and_clamp_at_episode_end(syn):
    ld = data.Loader(syn, micro_batch=2, horizon=5, prefetch=0, prompt_format="pi0")
    starts = np.load(os.path.join(syn, "episode_starts.npy"))
    last = starts[1] - 1  # last frame of episode 0
    b = ld._gather(np.array([last - 1, starts[1]]), np.arange(2))
    assert b["action_mask"][0].tolist() == [True, True, False, False, False], b["action_mask"][0]
    assert b["action_mask"][1].all()
    raw = np.load(os.path.join(syn, "actions.npy"))
    st = ld.stats["actions"]
    want = (raw[[last - 1, last, last, last, last]] - st["q01"]) / (st["q99"] - st["q01"] + 1e-6) * 2 - 1
    np.testing.assert_allclose(b["actions"][0, :, :7].numpy(), want, atol=1e-6)
    assert b["actions"].shape == (2, 5, 32) and not b["actions"][..., 7:].any(), "padding dims must be zero"
    np.testing.assert_allclose(b["actions"][1, :, :7].numpy(),
                               (raw[starts[1]:starts[1] + 5] - st["q01"]) / (st["q99"] - st["q01"] + 1e-6) * 2 - 1, atol=1e-6)
    # pi0 prompt rows come from the task table
    task = np.load(os.path.join(syn, "task_index.npy"))[last - 1]
    tok0, len0 = np.load(os.path.join(syn, "tokens_pi0.npy")), np.load(os.path.join(syn, "tokens_pi0_len.npy"))
    assert b["tokens"][0, :len0[task]].tolist() == tok0[task, :len0[task]].tolist()
    assert b["token_mask"][0].sum() == len0[task] and b["tokens"].dtype == torch.int64

def test_loader_cameras_are_the_prepared_ones(syn):
    ld = data.Loader(syn, micro_batch=3, prefetch=0)
    b = ld.next()[0]
    assert b["images"].shape == (3, 2, 3, 16, 16) and b["images"].dtype == torch.uint8
    assert b["image_mask"].tolist() == [[True, True]] * 3
    idx = ld.indices(0)[:3]
    for c in range(2):
        want = torch.from_numpy(np.load(os.path.join(syn, f"images_{c}.npy"))[idx])
        assert torch.equal(b["images"][:, c], want), f"camera {c} pixels differ"
    assert ld.wrist == [False, True]
    assert b["token_mask"].sum(1).tolist() == np.load(os.path.join(syn, "tokens_pi05_len.npy"))[idx].tolist()

# -----------------------------------------------------------------------------
# augmentation

def test_augment_shapes_range_and_per_example_params():
    g = torch.Generator().manual_seed(0)
    p = data.sample_augment_params(6, 2, generator=g)
    assert p["angle"].shape == (6, 2) and p["crop_xy"].shape == (6, 2, 2)
    assert p["angle"].abs().max() <= 5 and (p["brightness"] - 1).abs().max() <= 0.3
    for k in ("crop_xy", "angle", "brightness", "contrast", "saturation"):
        vals = {tuple(v) for v in p[k][:, 0].reshape(6, -1).tolist()}
        assert len(vals) == 6, f"every example needs its own {k}: {p[k][:, 0]}"
    img = torch.randint(0, 256, (1, 2, 3, 24, 24), dtype=torch.uint8).expand(6, -1, -1, -1, -1)
    out = data.augment_images(img, [False, True], p)
    assert out.shape == (6, 2, 3, 24, 24) and out.dtype == torch.float32
    assert out.min() >= -1 and out.max() <= 1, (out.min(), out.max())
    d = (out[0] - out[1]).abs().mean()
    assert d > 0.01, f"same image, different params must differ, mean diff {d}"
    p2 = data.sample_augment_params(6, 2, generator=torch.Generator().manual_seed(0))
    assert all(torch.equal(p[k], p2[k]) for k in p), "seeded generator must reproduce the params"

def test_shift_augment_moves_each_image_by_its_own_offset():
    """'shift': every camera (wrist too) moved by its own whole-pixel offset in -pad..pad with the edge repeated,
    nothing else changed; checked against a per-image numpy reference."""
    S, pad = 64, 2  # SHIFT = 1/32 of 64 px
    p = data.sample_augment_params(5, 2, generator=torch.Generator().manual_seed(3), kind="shift")
    assert set(p) == {"shift"} and p["shift"].shape == (5, 2, 2)
    p["shift"][0, 0] = torch.tensor([0.5, 0.5])      # no move
    p["shift"][1, 0] = torch.tensor([0.0, 0.99])     # 2 px right, 2 px up (content), clamped edges
    img = torch.randint(0, 256, (5, 2, 3, S, S), dtype=torch.uint8)
    out = data.augment_images(img, [False, True], p)
    assert out.shape == img.shape and out.dtype == torch.float32
    x = img.float().numpy() / 255 * 2 - 1
    moved = 0
    for b in range(5):
        for c in range(2):
            off = np.minimum(np.floor(p["shift"][b, c].numpy() * (2 * pad + 1)), 2 * pad)  # uniform over 2 pad + 1
            dx, dy = (off.astype(int) - pad).tolist()
            ys = np.clip(np.arange(S) + dy, 0, S - 1)
            xs = np.clip(np.arange(S) + dx, 0, S - 1)
            want = x[b, c][:, ys][:, :, xs]
            assert np.abs(out[b, c].numpy() - want).max() < 1e-6, (b, c, dx, dy)
            moved += (dx, dy) != (0, 0)
    assert np.abs(out[0, 0].numpy() - x[0, 0]).max() < 1e-6
    assert np.abs(out[1, 0].numpy() - x[1, 0]).mean() > 0.1  # a real move
    assert moved >= 5, "the offsets must differ per example and camera"

def test_augment_camera_layouts_agree():
    """The geometric cameras taken as a slice (evenly spaced) or as a list (not) give what augmenting each camera
    alone gives, in every layout of four cameras."""
    p = data.sample_augment_params(4, 4, generator=torch.Generator().manual_seed(5))
    img = torch.randint(0, 256, (4, 4, 3, 24, 24), dtype=torch.uint8)
    one = lambda c, w: data.augment_images(img[:, c:c + 1], [w], {k: v[:, c:c + 1] for k, v in p.items()})[:, 0]
    for wrist in itertools.product([False, True], repeat=4):  # [F, T, F, T]: a stepped slice, [F, F, T, F]: a list
        out = data.augment_images(img, wrist, p)
        for c, w in enumerate(wrist):
            err = (out[:, c] - one(c, w)).abs().max()
            assert err < 1e-6, f"wrist={wrist}: camera {c} differs from augmenting it alone by {err}"
    assert (data.augment_images(img, [False] * 4, p)[:, 1] - one(1, True)).abs().max() > 0.05  # geometry applied

def identity(n, cams):
    return {"crop_frac": torch.ones(n, cams), "crop_xy": torch.zeros(n, cams, 2), "angle": torch.zeros(n, cams),
            "brightness": torch.ones(n, cams), "contrast": torch.ones(n, cams), "saturation": torch.ones(n, cams)}

def test_augment_identity_params_reproduce_input():
    img = torch.randint(0, 256, (3, 2, 3, 20, 20), dtype=torch.uint8)
    out = data.augment_images(img, [False, False], identity(3, 2))
    err = (out - (img.float() / 255 * 2 - 1)).abs().max()
    assert err < 1e-5, f"max diff {err}"
    out = data.augment_images((img.float() / 255 * 2 - 1), [False, False], identity(3, 2))  # float input too
    assert (out - (img.float() / 255 * 2 - 1)).abs().max() < 1e-5

def test_augment_crop_offset_and_rotation_geometry():
    S_ = 16
    img = torch.rand(1, 1, 3, S_, S_)
    p = identity(1, 1)
    p["crop_frac"][:] = 0.5
    for xy, sl in (((0.0, 0.0), (slice(0, 8), slice(0, 8))), ((1.0, 1.0), (slice(8, 16), slice(8, 16))),
                   ((1.0, 0.0), (slice(0, 8), slice(8, 16)))):  # crop_xy = (x, y) fraction of the margin
        p["crop_xy"][0, 0] = torch.tensor(xy)
        out = (data.augment_images(img * 2 - 1, [False], p)[0, 0] + 1) / 2
        want = F.interpolate(img[0, :, :, sl[0], sl[1]], size=(S_, S_), mode="bilinear", align_corners=False)[0]
        err = (out - want)[:, 1:-1, 1:-1].abs().max()  # borders differ: interpolate clamps at the crop edge
        assert err < 1e-5, f"crop {xy}: max diff {err}"
    p = identity(1, 1)
    p["angle"][:] = 90.0
    out = (data.augment_images(img * 2 - 1, [False], p)[0, 0] + 1) / 2
    err = (out - torch.rot90(img[0, 0], k=1, dims=(-2, -1))).abs().max()
    assert err < 1e-5, f"+90 degrees is a counter-clockwise quarter turn on screen; max diff {err}"

def test_augment_wrist_not_geometric_and_color_formulas():
    img = torch.randint(0, 256, (4, 2, 3, 20, 20), dtype=torch.uint8)
    p = data.sample_augment_params(4, 2, generator=torch.Generator().manual_seed(1))
    for k in ("brightness", "contrast", "saturation"):
        p[k] = torch.ones(4, 2)
    out = data.augment_images(img, [False, True], p)
    ref = (img.float() / 255 * 2 - 1)
    err = (out[:, 1] - ref[:, 1]).abs().max()
    assert err < 1e-6, f"wrist camera changed by geometry, max diff {err}"
    assert (out[:, 0] - ref[:, 0]).abs().mean() > 0.05, "non-wrist camera must be warped"
    p = identity(4, 2)
    p["brightness"][:] = 0.8
    p["contrast"][:] = 1.3
    p["saturation"][:] = 0.6
    x = img.float() / 255 * 0.8
    m = x.mean(dim=(-3, -2, -1), keepdim=True)
    x = ((x - m) * 1.3 + m).clamp(0, 1)
    gray = x.mean(dim=-3, keepdim=True)
    x = ((x - gray) * 0.6 + gray).clamp(0, 1)
    err = (data.augment_images(img, [True, True], p) - (x * 2 - 1)).abs().max()
    assert err < 1e-5, f"colour jitter max diff {err}"

# -----------------------------------------------------------------------------
# synthetic dataset

def test_synthetic_needs_image_and_instruction(syn):
    meta = json.load(open(os.path.join(syn, "meta.json")))
    info = json.load(open(os.path.join(syn, "synthetic.json")))
    assert meta["cameras"] == ["image", "wrist_image"] and meta["action_dim"] == 7 and meta["vocab_size"] < 1024
    acts, state = np.load(os.path.join(syn, "actions.npy")), np.load(os.path.join(syn, "state.npy"))
    starts, task = np.load(os.path.join(syn, "episode_starts.npy")), np.load(os.path.join(syn, "task_index.npy"))
    img = np.load(os.path.join(syn, "images_0.npy"))
    train, val = data.split_episodes(meta["num_episodes"], 0.25)
    rows = lambda eps: np.concatenate([np.arange(starts[e], starts[e + 1]) for e in eps])
    tr, va = rows(train), rows(val)
    const = ((acts[va] - acts[tr].mean(0)) ** 2).mean()
    # instruction only: the best per-task constant
    per_task = np.stack([acts[tr][task[tr] == t].mean(0) if (task[tr] == t).any() else acts[tr].mean(0)
                         for t in range(len(meta["tasks"]))])
    instr = ((acts[va] - per_task[task[va]]) ** 2).mean()
    oracle, wrong = [], []
    for e in val:  # oracle: target from the scene + instruction, gripper from the state
        objs, k = info["episodes"][e]["objects"], info["episodes"][e]["target"]
        c, s, x, y = objs[k]
        assert meta["tasks"][task[starts[e]]] == f"move to the {c} {s}"
        assert len({(o[0], o[1]) for o in objs}) == 3, "objects must be distinct so the instruction picks one"
        px = lambda v: min(int(v * img.shape[-1]), img.shape[-1] - 1)
        if np.linalg.norm(state[starts[e], :2] - [x, y]) > 0.1:  # target not under the gripper in frame 0
            assert tuple(img[starts[e], :, px(y), px(x)]) == sim.COLORS[c], (e, objs[k])
        for i in range(starts[e], starts[e + 1]):
            for j, o in enumerate(objs):  # the scene's other objects: right image, wrong instruction
                d = np.array(o[2:]) - state[i, :2]
                dist = np.linalg.norm(d)
                move = d if dist <= sim.STEP else d / dist * sim.STEP
                closed = state[i, 2] > 0 or dist <= sim.STEP
                err = (acts[i] - [move[0] * 10, move[1] * 10, 0, 0, 0, 0, 1 if closed else -1]) ** 2
                (oracle if j == k else wrong).append(err)
    oracle, wrong = np.mean(oracle), np.mean(wrong)
    assert oracle < 1e-6 * const, f"oracle MSE {oracle:.3g} vs constant {const:.3g}"
    assert instr > 0.5 * const, f"instruction alone should not suffice: {instr:.3g} vs constant {const:.3g}"
    assert wrong > 0.5 * const, f"heading for another object in the scene: {wrong:.3g} vs constant {const:.3g}"

def test_synthetic_prompt_decodes(syn):
    meta = json.load(open(os.path.join(syn, "meta.json")))
    tok = data.WordTokenizer([])
    tok.vocab = meta["vocab"]
    t05, n05 = np.load(os.path.join(syn, "tokens_pi05.npy")), np.load(os.path.join(syn, "tokens_pi05_len.npy"))
    task = np.load(os.path.join(syn, "task_index.npy"))
    assert t05[0, 0] == 2 and (t05 < 1024).all()
    text = tok.decode(t05[0, :n05[0]].tolist())
    assert text.startswith("Task : " + meta["tasks"][task[0]] + " , State :"), text

# -----------------------------------------------------------------------------
# GPU

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_augment_matches_cpu_and_loader_pins(syn):
    p = data.sample_augment_params(8, 3, generator=torch.Generator().manual_seed(0))
    img = torch.randint(0, 256, (8, 3, 3, 32, 32), dtype=torch.uint8)
    cpu = data.augment_images(img, [False, True, True], p)
    gpu = data.augment_images(img.cuda(), [False, True, True], {k: v.cuda() for k, v in p.items()}).cpu()
    diff = (gpu - cpu).abs()
    assert diff.mean() < 1e-4 and (diff > 1e-3).float().mean() < 1e-3, (diff.mean(), diff.max())
    ps = data.sample_augment_params(8, 3, generator=torch.Generator().manual_seed(1), kind="shift")
    shifted = data.augment_images(img.cuda(), [False, True, True], {"shift": ps["shift"].cuda()}).cpu()
    err = (shifted - data.augment_images(img, [False, True, True], ps)).abs().max()
    assert err < 1e-6, f"shift: cuda differs from cpu by {err}"
    pc = data.sample_augment_params(8, 3, generator=torch.Generator("cuda").manual_seed(0), device="cuda")
    assert all(v.is_cuda for v in pc.values())
    ld = data.Loader(syn, micro_batch=2, prefetch=1)
    b = ld.next()[0]
    ld.close()
    assert all(v.is_pinned() for v in b.values()), {k: v.is_pinned() for k, v in b.items()}

# -----------------------------------------------------------------------------
# order and naming rules a source dataset may not follow

def test_rows_out_of_frame_order_and_a_shuffled_task_table_prepare_the_same(tmp_path, spm_path):
    """LeRobot v3: the data file's rows reversed and the task table's rows reversed give the same prepared arrays
    (frames are ordered by frame_index, tasks looked up by task_index)."""
    import pyarrow.parquet as pq
    src = str(tmp_path / "src")
    write_lerobot(src, [4, 5, 3], [1, 0, 2], version="v3.0")
    ref = prepare.prepare(src, str(tmp_path / "ref"), spm_path, image_size=S, max_token_len=128, workers=1)
    data_file = os.path.join(src, "data", "chunk-000", "file-000.parquet")
    t = pq.read_table(data_file)
    pq.write_table(t.take(list(range(t.num_rows))[::-1]), data_file)
    tasks = os.path.join(src, "meta", "tasks.parquet")
    tt = pq.read_table(tasks)
    pq.write_table(tt.take(list(range(tt.num_rows))[::-1]), tasks)
    got = prepare.prepare(src, str(tmp_path / "got"), spm_path, image_size=S, max_token_len=128, workers=1)
    assert got["tasks"] == ref["tasks"]
    for name in ("images_0.npy", "state.npy", "actions.npy", "task_index.npy", "tokens_pi05.npy"):
        a, b = np.load(tmp_path / "ref" / name), np.load(tmp_path / "got" / name)
        assert np.array_equal(a, b), name

def test_wrist_rule_ignores_case():
    assert data.is_wrist("Wrist") and data.is_wrist("cam_WRIST_left") and data.is_wrist("wrist_image")
    assert not data.is_wrist("image") and not data.is_wrist("top")


def test_a_broken_synthetic_directory_names_the_command_that_writes_it_again(tmp_path):
    """The fix a damaged synthetic directory's error gives, run as printed, writes the same arrays again."""
    import shlex
    out = tmp_path / "syn"
    sim.make_synthetic(str(out), episodes=4, image_size=16, seed=3, max_token_len=24, objects=1)
    ref = np.load(out / "images_0.npy")
    os.remove(out / "images_0.npy")
    with pytest.raises(data.DataError, match="images_0.npy is missing") as err:
        data.check_prepared(str(out))
    command = str(err.value).split("prepare the directory again: ")[1]
    assert command.startswith("python sim.py synthetic "), command
    sim.main(shlex.split(command)[2:])
    assert np.array_equal(np.load(out / "images_0.npy"), ref), command
