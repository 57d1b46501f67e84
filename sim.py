"""
The simulators a policy is evaluated in, each with a scripted expert that writes training data:

- `Scene`: a synthetic tabletop (coloured shapes, a gripper cross seen by a table and a wrist camera, "move to the
  red square"). Pure numpy, milliseconds per step; `make_synthetic` records its expert straight into the prepared
  format train.py reads.
- Meta-World (`MetaWorld`, `write_metaworld`): MuJoCo tasks with scripted experts, written as a LeRobot v3.0 dataset
  that `prepare.py --src=...` prepares like any other (needs `pip install metaworld==3.1.1 packaging` and a headless
  OpenGL: MUJOCO_GL=egl on a GPU, osmesa on a CPU; default_gl() picks one when MUJOCO_GL is unset).

    python sim.py synthetic --out=data_cache/synthetic --episodes=2000 --objects=1
    python sim.py metaworld --out=data_cache/mt10_lerobot --tasks=mt10 --episodes=50 --workers=16

eval.py drives these simulators through the websocket client; the demonstration seeds and the evaluation seeds are
disjoint (synthetic: one generator seeded 0 for data, (seed=1000, episode) for evaluation; Meta-World: seeds from 0
for data, from 10000 for evaluation).
"""
import json
import math
import numbers
import os
import sys
import time
import warnings

import numpy as np
from tqdm import tqdm

import data

# -----------------------------------------------------------------------------

COLORS = {"red": (220, 40, 40), "green": (40, 180, 60), "blue": (50, 80, 230), "yellow": (230, 210, 40)}
SHAPES = ("square", "circle", "triangle")
OBJ_R, STEP, WRIST_HALF, HOLD = 0.09, 0.03, 0.25, 3  # object radius, move per frame, wrist half-width, frames held closed

def _inside(shape, dx, dy):
    if shape == "square":
        return (np.abs(dx) <= 0.8 * OBJ_R) & (np.abs(dy) <= 0.8 * OBJ_R)
    if shape == "circle":
        return dx * dx + dy * dy <= OBJ_R * OBJ_R
    return (np.abs(dy) <= OBJ_R) & (np.abs(dx) <= (dy + OBJ_R) / 2)  # apex up (y grows downward)

def _render(xy, objects, grip, closed):
    """xy: (T, S, S, 2) scene coords of each pixel; returns uint8 (T, 3, S, S)."""
    x, y = xy[..., 0], xy[..., 1]
    img = np.full(x.shape + (3,), 100, np.uint8)
    img[(x < 0) | (x > 1) | (y < 0) | (y > 1)] = 25  # off the table (wrist view near the edge)
    for color, shape, px, py in objects:
        img[_inside(shape, x - px, y - py)] = COLORS[color]
    dx, dy = x - grip[:, 0, None, None], y - grip[:, 1, None, None]
    cross = ((np.abs(dx) < 0.015) & (np.abs(dy) < 0.05)) | ((np.abs(dy) < 0.015) & (np.abs(dx) < 0.05))
    img[cross & ~closed[:, None, None]] = 255
    img[cross & closed[:, None, None]] = 0
    return img.transpose(0, 3, 1, 2)

SYNTHETIC_TASKS = [f"move to the {c} {s}" for c in COLORS for s in SHAPES]
ACTION_SCALE = 10  # actions hold 10x the gripper's displacement, so they are of order 0.3 like LIBERO's

def render_views(objects, grips, closed, size):
    """the two cameras of the synthetic task, for T gripper positions (T, 2) and closed flags (T,):
    uint8 (T, 2, 3, S, S), 'image' (the whole table) then 'wrist_image' (a zoomed view centred on the gripper)."""
    pix = (np.arange(size) + 0.5) / size
    full = np.stack(np.meshgrid(pix, pix, indexing="xy"), -1)  # (S, S, 2) as (x, y)
    T = len(grips)
    table = _render(np.broadcast_to(full, (T, size, size, 2)), objects, grips, closed)
    wrist = _render((full - 0.5)[None] * 2 * WRIST_HALF + grips[:, None, None], objects, grips, closed)
    return np.stack([table, wrist], 1)

class Scene:
    """the synthetic task as a small simulator. one to three distinct (colour, shape) objects on a grey table, a gripper
    (a cross) and an instruction naming one of them. step(action) moves the gripper by action[:2] / ACTION_SCALE,
    at most STEP per step, and closes it for good when action[6] > 0; the episode ends when it closes, a success
    when that happens within OBJ_R of the named object. make_synthetic records the expert in this simulator, so a
    replay of a dataset episode's actions reproduces its frames."""

    def __init__(self, objects, target, grip):
        self.objects, self.target = [tuple(o) for o in objects], int(target)
        self.grip, self.closed = np.array(grip, np.float64), False

    @classmethod
    def random(cls, rng, objects=3):
        """`objects` (1-3) distinct objects apart enough not to overlap; the gripper starts 0.5-1.0 from the named
        one. objects=1 is the easy variant: the instruction is redundant, only the image says where to go."""
        combos = rng.choice(len(COLORS) * len(SHAPES), 3, replace=False)
        while True:
            pos = rng.uniform(0.15, 0.85, (3, 2))
            if min(np.linalg.norm(pos[i] - pos[j]) for i in range(3) for j in range(i)) > 3 * OBJ_R:
                break
        target = int(rng.integers(3))
        while True:
            g = rng.uniform(0.05, 0.95, 2)
            if 0.5 <= np.linalg.norm(pos[target] - g) <= 1.0:
                break
        placed = [(list(COLORS)[k // len(SHAPES)], SHAPES[k % len(SHAPES)], float(x), float(y)) for k, (x, y) in zip(combos, pos)]
        keep = sorted({target, *[i for i in range(3) if i != target][:objects - 1]})
        return cls([placed[i] for i in keep], keep.index(target), g)

    @property
    def task(self):
        color, shape = self.objects[self.target][:2]
        return f"move to the {color} {shape}"

    def distance(self):
        return float(np.linalg.norm(np.array(self.objects[self.target][2:]) - self.grip))

    def expert_length(self):
        return int(math.ceil(self.distance() / STEP)) + HOLD

    def state(self):
        return np.array([self.grip[0], self.grip[1], 1.0 if self.closed else -1.0], np.float32)

    def images(self, size):
        return render_views(self.objects, self.grip[None], np.array([self.closed]), size)[0]

    def expert_action(self):
        """straight at the named object, STEP per step; grip +1 from the step that reaches it"""
        d = np.array(self.objects[self.target][2:]) - self.grip
        dist = np.linalg.norm(d)
        move = d if dist <= STEP else d / dist * STEP
        grip = 1.0 if self.closed or dist <= STEP else -1.0
        return np.array([move[0] * ACTION_SCALE, move[1] * ACTION_SCALE, 0, 0, 0, 0, grip], np.float32)

    def step(self, action):
        """-> done. the gripper moves, then closes if asked; closing ends the episode."""
        a = np.asarray(action, np.float64)
        move = a[:2] / ACTION_SCALE
        n = np.linalg.norm(move)
        self.grip = self.grip + (move * (STEP / n) if n > STEP else move)
        self.closed = self.closed or bool(a[6] > 0)
        return self.closed

    def success(self):
        return self.closed and self.distance() <= OBJ_R

def _render_episodes(job):
    """one worker of make_synthetic: both cameras of a run of episodes, written into the image memmaps at their frames."""
    out_dir, S, episodes = job
    ims = [np.load(os.path.join(out_dir, f"images_{c}.npy"), mmap_mode="r+") for c in range(2)]
    for s0, objects, grips, closed in episodes:
        views = render_views(objects, grips, closed, S)
        ims[0][s0:s0 + len(grips)], ims[1][s0:s0 + len(grips)] = views[:, 0], views[:, 1]
    for m in ims:
        m.flush()
    return len(episodes)

def make_synthetic(out_dir, episodes=200, image_size=64, seed=0, max_token_len=32, objects=3, workers=None):
    """write a small learnable dataset in the prepared format, the expert of Scene recorded for `episodes`
    scenes of `objects` objects (20-37 frames each; the gripper holds closed for HOLD frames at the end). actions (7, LIBERO-like) =
    [10 dx, 10 dy, 0, 0, 0, 0, grip]; state = [x, y, closed]. the right action needs the image (where things
    are) and the instruction (which one). cameras: 'image' (whole table) and 'wrist_image' (zoomed on the
    gripper). per-episode objects, targets and start positions go to synthetic.json (for oracles and replays).
    The scenes and the expert's paths are drawn in this process; the rendering, most of the time, runs in `workers`
    processes (None: one per usable CPU, at most 32, from 1000 episodes on, else this process alone); the files are
    the same either way."""
    if episodes < 1 or (workers is not None and workers < 1):
        raise ValueError(f"make_synthetic: episodes={episodes}, workers={workers}: expected at least 1 of each")
    rng = np.random.default_rng(seed)
    S = image_size
    scenes = [Scene.random(rng, objects) for _ in range(episodes)]
    lengths = np.array([sc.expert_length() for sc in scenes], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    n_frames = int(starts[-1])
    os.makedirs(out_dir, exist_ok=True)
    for c in range(2):
        np.lib.format.open_memmap(os.path.join(out_dir, f"images_{c}.npy"), "w+", np.uint8, (n_frames, 3, S, S)).flush()
    state, actions = np.zeros((n_frames, 3), np.float32), np.zeros((n_frames, 7), np.float32)
    task_index = np.zeros(n_frames, np.int32)
    info, paths = [], []
    for e, (sc, T) in enumerate(zip(scenes, lengths)):
        s0 = int(starts[e])
        info.append({"objects": [list(o) for o in sc.objects], "target": sc.target, "grip": sc.grip.tolist()})
        grips, closed = np.zeros((T, 2)), np.zeros(T, bool)
        for t in range(T):
            grips[t], closed[t], state[s0 + t] = sc.grip, sc.closed, sc.state()
            actions[s0 + t] = sc.expert_action()
            sc.step(actions[s0 + t])
        task_index[s0:s0 + T] = SYNTHETIC_TASKS.index(sc.task)
        paths.append((s0, sc.objects, grips, closed))
    if workers is None:
        workers = min(len(os.sched_getaffinity(0)), 32) if episodes >= 1000 else 1
    per_job = -(-episodes // (4 * workers))
    jobs = [(out_dir, S, paths[i:i + per_job]) for i in range(0, episodes, per_job)]
    bar = tqdm(total=episodes, desc="render scenes", unit="episode", disable=episodes < 1000)
    if workers > 1:
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(workers) as pool:  # spawn: the caller may hold CUDA or OpenMP state
            for n in pool.imap_unordered(_render_episodes, jobs):
                bar.update(n)
    else:
        for job in jobs:
            bar.update(_render_episodes(job))
    bar.close()
    with open(os.path.join(out_dir, "synthetic.json"), "w") as f:
        json.dump({"episodes": info, "step": STEP, "action_scale": ACTION_SCALE}, f)
    tok = data.word_tokenizer(SYNTHETIC_TASKS)
    cameras = ["image", "wrist_image"]
    meta = dict(format=1, source="synthetic", cameras=cameras, wrist=[data.is_wrist(c) for c in cameras],
                image_size=S, fps=10.0, tokenizer="words", vocab=tok.vocab, vocab_size=len(tok.vocab), seed=seed,
                sim=dict(env="synthetic", objects=objects), direction_dims=2)
    return data.write_prepared(out_dir, meta, state, actions, starts, task_index, SYNTHETIC_TASKS, tok, max_token_len)


# -----------------------------------------------------------------------------
# Meta-World: the MT10/MT50 tasks of a Sawyer arm in MuJoCo, each with a scripted expert (metaworld.policies)

MT10 = ["reach-v3", "push-v3", "pick-place-v3", "door-open-v3", "drawer-open-v3", "drawer-close-v3",
        "button-press-topdown-v3", "peg-insert-side-v3", "window-open-v3", "window-close-v3"]
# the instruction of each task, as LeRobot's Meta-World environment and dataset phrase it
INSTRUCTIONS = {
    "assembly-v3": "Pick up a nut and place it onto a peg",
    "basketball-v3": "Dunk the basketball into the basket",
    "bin-picking-v3": "Grasp the puck from one bin and place it into another bin",
    "box-close-v3": "Grasp the cover and close the box with it",
    "button-press-topdown-v3": "Press a button from the top",
    "button-press-topdown-wall-v3": "Bypass a wall and press a button from the top",
    "button-press-v3": "Press a button",
    "button-press-wall-v3": "Bypass a wall and press a button",
    "coffee-button-v3": "Push a button on the coffee machine",
    "coffee-pull-v3": "Pull a mug from a coffee machine",
    "coffee-push-v3": "Push a mug under a coffee machine",
    "dial-turn-v3": "Rotate a dial 180 degrees",
    "disassemble-v3": "Pick a nut out of a peg",
    "door-close-v3": "Close a door with a revolving joint",
    "door-lock-v3": "Lock the door by rotating the lock clockwise",
    "door-open-v3": "Open a door with a revolving joint",
    "door-unlock-v3": "Unlock the door by rotating the lock counter-clockwise",
    "hand-insert-v3": "Insert the gripper into a hole",
    "drawer-close-v3": "Push and close a drawer",
    "drawer-open-v3": "Open a drawer",
    "faucet-open-v3": "Rotate the faucet counter-clockwise",
    "faucet-close-v3": "Rotate the faucet clockwise",
    "hammer-v3": "Hammer a screw on the wall",
    "handle-press-side-v3": "Press a handle down sideways",
    "handle-press-v3": "Press a handle down",
    "handle-pull-side-v3": "Pull a handle up sideways",
    "handle-pull-v3": "Pull a handle up",
    "lever-pull-v3": "Pull a lever down 90 degrees",
    "pick-place-wall-v3": "Pick a puck, bypass a wall and place the puck",
    "pick-out-of-hole-v3": "Pick up a puck from a hole",
    "pick-place-v3": "Pick and place a puck to a goal",
    "plate-slide-v3": "Slide a plate into a cabinet",
    "plate-slide-side-v3": "Slide a plate into a cabinet sideways",
    "plate-slide-back-v3": "Get a plate from the cabinet",
    "plate-slide-back-side-v3": "Get a plate from the cabinet sideways",
    "peg-insert-side-v3": "Insert a peg sideways",
    "peg-unplug-side-v3": "Unplug a peg sideways",
    "soccer-v3": "Kick a soccer into the goal",
    "stick-push-v3": "Grasp a stick and push a box using the stick",
    "stick-pull-v3": "Grasp a stick and pull a box with the stick",
    "push-v3": "Push the puck to a goal",
    "push-wall-v3": "Bypass a wall and push a puck to a goal",
    "push-back-v3": "Pull a puck to a goal",
    "reach-v3": "Reach a goal position",
    "reach-wall-v3": "Bypass a wall and reach a goal",
    "shelf-place-v3": "Pick and place a puck onto a shelf",
    "sweep-into-v3": "Sweep a puck into a hole",
    "sweep-v3": "Sweep a puck off the table",
    "window-open-v3": "Push and open a window",
    "window-close-v3": "Push and close a window",
}
MT50 = list(INSTRUCTIONS)
# the difficulty groups of Seo et al. 2022 that Meta-World results (SmolVLA, pi0) are reported by
HARD = ["assembly-v3", "hand-insert-v3", "pick-out-of-hole-v3", "pick-place-v3", "push-v3", "push-back-v3"]
VERY_HARD = ["shelf-place-v3", "disassemble-v3", "stick-pull-v3", "stick-push-v3", "pick-place-wall-v3"]
MEDIUM = ["basketball-v3", "bin-picking-v3", "box-close-v3", "coffee-pull-v3", "coffee-push-v3", "hammer-v3",
          "peg-insert-side-v3", "push-wall-v3", "soccer-v3", "sweep-v3", "sweep-into-v3"]

def difficulty(task):
    return "very hard" if task in VERY_HARD else "hard" if task in HARD else "medium" if task in MEDIUM else "easy"

def metaworld_tasks(spec):
    """'mt10' | 'mt50' | comma-separated task names -> the task list (a name given twice counts once), or a ValueError
    naming the unknown ones."""
    tasks = {"mt10": MT10, "mt50": MT50}.get(spec.lower()) or spec.split(",")
    unknown = [t for t in tasks if t not in INSTRUCTIONS]
    if unknown:
        raise ValueError(f"unknown Meta-World tasks {unknown}: use mt10, mt50 or names like reach-v3,push-v3")
    return list(dict.fromkeys(tasks))

def task_parts(n_tasks, per_task, procs, min_part=1, parts=None):
    """One task's `per_task` items (episodes, seeds) as contiguous (first, count) ranges for parallel jobs: the whole
    task while there are no more processes than tasks, else about two parts per process (for balance), each of at
    least min_part items; `parts` forces the number of ranges."""
    if parts is None:
        parts = 1 if procs <= n_tasks else max(1, min(-(-2 * procs // n_tasks), per_task // min_part))
    return [(per_task * k // parts, per_task * (k + 1) // parts - per_task * k // parts) for k in range(parts)]

def default_gl():
    """MUJOCO_GL for headless rendering: egl where an NVIDIA GPU is visible, else Mesa's software osmesa."""
    return "egl" if os.path.exists("/dev/nvidia0") else "osmesa"

DEMO_SEED, EVAL_SEED, MAX_STEPS, FPS = 0, 10_000, 400, 80  # seeds: demonstrations from 0, evaluation from 10000;
                                                           # LeRobot's 400-step cap; Meta-World's 80 Hz control

class MetaWorld:
    """One Meta-World task as a simulator with the two cameras of the dataset: 'image', corner4 turned 180 degrees
    (the view LeRobot's Meta-World environment renders), and 'wrist_image', the gripper's own camera. State: hand
    xyz and gripper opening (obs[:4]); actions: dx, dy, dz, gripper in [-1, 1]. reset(seed) is reproducible;
    success is Meta-World's own per-step test (info['success']); the episode never ends by itself. distance and
    closest: Meta-World's obj_to_target (the object's distance to its goal, reach: the hand's) after the last step,
    and the least of it over the episode."""

    def __init__(self, task, size=128):
        import metaworld  # noqa: F401  (MuJoCo and its assets come with it)
        import metaworld.policies as policies
        import mujoco
        warnings.filterwarnings("ignore", message=r"Constant\(s\) may be too high")  # the experts' own gains
        self.task, self.instruction = task, INSTRUCTIONS[task]
        bench = metaworld.MT1(task, seed=0)  # builds this task only (MT50() alone takes minutes)
        self.env = bench.train_classes[task]()
        self.env.set_task(bench.train_tasks[0])
        # the scene's 4096 shadow map and 4x MSAA cost 7x the render time for the same picture at this size
        self.env.model.vis.quality.shadowsize = 0
        self.env.model.vis.quality.offsamples = 0
        self.renderer = mujoco.Renderer(self.env.model, size, size)
        name = "SawyerPegInsertionSideV3Policy" if task == "peg-insert-side-v3" else \
            "Sawyer" + "".join(w.capitalize() for w in task[:-3].split("-")) + "V3Policy"
        self.expert = getattr(policies, name)()
        self.obs, self.success, self.size = None, False, size
        self.distance = self.closest = float('nan')

    def reset(self, seed):
        # reset(seed=...) alone keeps the previous object positions once _freeze_rand_vec is off: seed the env itself
        self.env._freeze_rand_vec, self.env.seeded_rand_vec = False, True
        self.env.seed(int(seed))
        self.obs, _ = self.env.reset()
        import mujoco
        # Meta-World's reset draws the goal twice (its own reset_model, then gymnasium's) and moves the goal marker
        # (reach, push, pick-place...) after the last forward pass, so the first frame would show the first draw's
        # goal: recompute positions and cameras only (mj_kinematics, mj_camlight; unlike mj_forward they leave the
        # solver's warm start, hence the episode's physics, as they were)
        mujoco.mj_kinematics(self.env.model, self.env.data)
        mujoco.mj_camlight(self.env.model, self.env.data)
        self.success, self.distance, self.closest = False, float('nan'), float('inf')

    def images(self):
        """uint8 (2, S, S, 3): 'image' then 'wrist_image'."""
        out = []
        for cam in ("corner4", "gripperPOV"):
            self.renderer.update_scene(self.env.data, camera=cam)
            img = self.renderer.render()
            out.append(img[::-1, ::-1] if cam == "corner4" else img)  # the corner cameras render upside down
        return np.stack(out)

    def state(self):
        return np.asarray(self.obs[:4], np.float32)

    def expert_action(self):
        return np.clip(self.expert.get_action(self.obs), -1, 1).astype(np.float32)

    def step(self, action):
        """-> success (the episode's first success ends it, as LeRobot's evaluation does)."""
        self.obs, _, _, _, info = self.env.step(np.clip(np.asarray(action, np.float32), -1, 1))
        self.success = bool(info["success"])
        self.distance = float(info["obj_to_target"])
        self.closest = min(self.closest, self.distance)
        return self.success

    def close(self):
        self.renderer.close()  # one GL context at a time: a second renderer in the same process draws garbage
        self.env.close()

def _png(img):
    import io
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()

def _record_task(job):
    """one worker: up to job['need'] successful expert episodes of one task from seeds job['seed'], +1, ... (failures
    skipped, at most job['max_tries'] seeds tried), written as data/chunk-000/file-<job['file']>.parquet with episode
    numbers from job['first_episode']. With action_noise > 0 the robot executes the expert's action plus
    Gaussian noise of that std on dx, dy, dz (seeded by the episode's seed) while the dataset records the expert's own
    action, so the data shows how the expert recovers from states a clean run never visits (DART, Laskey et al.
    2017); the executed action is clipped to [-1, 1] like any other. With hold_steps > 0 the expert goes on for that
    many steps after its first success, so the data also show what to do at the goal (a clean run that stops there
    never shows a state past it). Returns (job, [{seed, length}] per kept episode, tries)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    task, index, size, out = job["task"], job["index"], job["size"], job["out"]
    noise, hold = job.get("action_noise", 0.0), job.get("hold_steps", 0)
    sim = MetaWorld(task, size)
    kept, tries, seed = [], 0, job["seed"]
    while len(kept) < job["need"] and tries < job["max_tries"]:
        sim.reset(seed)
        rng = np.random.default_rng([seed, index, 1])  # each task and episode its own noise
        frames, states, actions, left = [], [], [], None  # left: steps still to record after the first success
        for _ in range(MAX_STEPS):
            frames.append(sim.images())
            states.append(sim.state())
            actions.append(sim.expert_action())
            executed = actions[-1].copy()
            if noise > 0:
                executed[:3] += rng.normal(0.0, noise, 3).astype(np.float32)
            if sim.step(executed) and left is None:
                left = hold
            if left is not None:
                if left == 0:
                    break
                left -= 1
        if left is not None:
            kept.append((seed, np.stack(frames), np.stack(states), np.stack(actions)))
        tries, seed = tries + 1, seed + 1
    sim.close()
    if not kept:
        return job, [], tries
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    tables = []
    for e, (seed, frames, states, actions) in enumerate(kept):
        T = len(frames)
        cols = {"observation.images.image": pa.array([{"bytes": _png(f[0]), "path": None} for f in frames], image),
                "observation.images.wrist_image": pa.array([{"bytes": _png(f[1]), "path": None} for f in frames], image),
                "observation.state": pa.array(list(states), pa.list_(pa.float32(), 4)),
                "action": pa.array(list(actions), pa.list_(pa.float32(), 4)),
                "timestamp": pa.array(np.arange(T, dtype=np.float32) / FPS), "frame_index": pa.array(np.arange(T)),
                "episode_index": pa.array(np.full(T, job["first_episode"] + e)), "task_index": pa.array(np.full(T, index))}
        tables.append(pa.table(cols))
    path = os.path.join(out, "data", "chunk-000", f"file-{job['file']:03d}.parquet")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.concat_tables(tables), path, row_group_size=256)
    return job, [dict(seed=seed, length=len(frames)) for seed, frames, _, _ in kept], tries

def write_metaworld(out, tasks="mt10", episodes=50, size=128, workers=None, action_noise=0.0, hold_steps=0,
                   parts=None):
    """Scripted-expert demonstrations of Meta-World tasks as a LeRobot v3.0 dataset at `out` (PNG frames in parquet,
    meta/info.json, meta/tasks.parquet, meta/episodes/), `episodes` successful episodes per task from seeds
    DEMO_SEED, DEMO_SEED + 1, ... (an expert failure is skipped and counted), ended hold_steps steps after the first
    success or after MAX_STEPS steps; action_noise, hold_steps: see _record_task (0, 0: the expert's clean runs ended
    at their first success).
    `workers` processes (default: one per CPU, at most 32). With more processes than tasks a task's seeds are split
    into `parts` contiguous ranges (default: two per process, at least 5 episodes each); where the expert failed in
    them, one more job goes on after the last range. The episodes are those one process per task writes; only the
    files differ (one per part, numbered in task and seed order). Then: python prepare.py --src=<out> --out=...
    --tokenizer=words."""
    import contextlib
    import glob
    import multiprocessing as mp
    import pyarrow as pa
    import pyarrow.parquet as pq
    names = metaworld_tasks(tasks) if isinstance(tasks, str) else list(tasks)
    if not action_noise >= 0:
        raise ValueError(f"action_noise={action_noise}: expected a std >= 0 (0: the expert's clean runs)")
    if isinstance(hold_steps, bool) or not (isinstance(hold_steps, numbers.Integral) and hold_steps >= 0):
        raise ValueError(f"hold_steps={hold_steps}: expected a whole number of steps >= 0 (0: end at the first success)")
    if parts is not None and not (isinstance(parts, numbers.Integral) and parts >= 1):
        raise ValueError(f"parts={parts}: expected a whole number >= 1 (None: from the number of processes)")
    info_path = os.path.join(out, "meta", "info.json")
    if os.path.isdir(out) and os.listdir(out):  # only a dataset this writer wrote is replaced
        try:
            with open(info_path) as f:
                info = json.load(f)
            ours = info.get("robot_type") == "sawyer" and "hold_steps" in info
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise ValueError(f"{out} is not empty and holds no dataset this writer wrote: choose a new or empty --out")
        os.remove(info_path)  # written last: a run that stops half way leaves no dataset that looks complete
        for stale in glob.glob(os.path.join(out, "data", "chunk-000", "file-*.parquet")) + \
                glob.glob(os.path.join(out, "meta", "episodes", "chunk-000", "file-*.parquet")):
            os.remove(stale)
    os.makedirs(os.path.join(out, "meta", "episodes", "chunk-000"), exist_ok=True)
    procs = workers or min(len(os.sched_getaffinity(0)), 32)
    ranges = task_parts(len(names), episodes, procs, min_part=5, parts=parts)
    parts = len(ranges)
    slots = parts + (parts > 1)  # task i's files: i * slots + (its parts, then the job after them)
    common = dict(size=size, out=out, action_noise=action_noise, hold_steps=hold_steps)

    def job(i, k, seed, need, max_tries, first_episode):  # episodes numbered provisionally, as if no try failed
        return dict(task=names[i], index=i, file=i * slots + k, seed=seed, need=need, max_tries=max_tries,
                    first_episode=first_episode, **common)

    jobs = []
    for i in range(len(names)):
        for k, (first, n) in enumerate(ranges):
            jobs.append(job(i, k, DEMO_SEED + first, n, 3 * episodes if parts == 1 else n, i * episodes + first))
    results = {}  # file number -> (job, [{seed, length}], tries)
    processes = mp.get_context("spawn").Pool(min(procs, len(jobs))) if min(procs, len(jobs)) > 1 else \
        contextlib.nullcontext()  # spawn: a forked MuJoCo/GL context is not safe to reuse
    with tqdm(total=len(names) * episodes, desc="expert demonstrations", unit="episode") as bar, processes as pool:
        def run(batch):
            for r in (pool.imap_unordered(_record_task, batch) if pool else map(_record_task, batch)):
                results[r[0]["file"]] = r
                bar.update(len(r[1]))
        run(jobs)
        extra = []
        for i in range(len(names)):
            kept = sum(len(eps) for j, eps, _ in results.values() if j["index"] == i)
            tried = sum(tries for j, _, tries in results.values() if j["index"] == i)
            if parts > 1 and kept < episodes and tried < 3 * episodes:
                extra.append(job(i, parts, DEMO_SEED + tried, episodes - kept, 3 * episodes - tried,
                                 i * episodes + kept))
        run(extra)
    # global episode numbers and frame ranges in task and seed order (= file order); a file whose episodes moved (an
    # expert failure before them) gets its episode_index column rewritten
    rows, start, episode, report = [], 0, 0, []
    for i, t in enumerate(names):
        mine = [results[f] for f in sorted(results) if results[f][0]["index"] == i]
        report.append((t, sum(len(eps) for _, eps, _ in mine), sum(tries for _, _, tries in mine)))
        if report[-1][1] == 0:
            raise ValueError(f"{t}: the scripted expert failed all {report[-1][2]} tries (seeds {DEMO_SEED}-"
                             f"{DEMO_SEED + report[-1][2] - 1}); leave this task out")
        for j, eps, _ in mine:
            if eps and episode != j["first_episode"]:
                path = os.path.join(out, "data", "chunk-000", f"file-{j['file']:03d}.parquet")
                table = pq.read_table(path)
                e = table.column("episode_index").to_numpy() - j["first_episode"] + episode
                pq.write_table(table.set_column(table.schema.get_field_index("episode_index"), "episode_index",
                                                pa.array(e)), path, row_group_size=256)
            for k, r in enumerate(eps):
                rows.append({"episode_index": episode, "tasks": [INSTRUCTIONS[t]], "length": r["length"],
                             "data/chunk_index": 0, "data/file_index": j["file"], "dataset_from_index": start,
                             "dataset_to_index": start + r["length"], "seed": r["seed"], "env_task": t,
                             "file_episode": k})
                start, episode = start + r["length"], episode + 1
    pq.write_table(pa.Table.from_pylist(rows), os.path.join(out, "meta", "episodes", "chunk-000", "file-000.parquet"))
    pq.write_table(pa.table({"task_index": list(range(len(names))), "task": [INSTRUCTIONS[t] for t in names]}),
                   os.path.join(out, "meta", "tasks.parquet"))
    image = {"dtype": "image", "shape": [size, size, 3], "names": ["height", "width", "channel"]}
    info = {"codebase_version": "v3.0", "robot_type": "sawyer", "fps": FPS, "action_noise": action_noise,
            "hold_steps": hold_steps,
            "total_episodes": episode,
            "total_frames": start, "total_tasks": len(names), "chunks_size": 1000,
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "features": {"observation.images.image": image, "observation.images.wrist_image": image,
                         "observation.state": {"dtype": "float32", "shape": [4], "names": ["x", "y", "z", "gripper"]},
                         "action": {"dtype": "float32", "shape": [4], "names": ["dx", "dy", "dz", "gripper"]},
                         "timestamp": {"dtype": "float32", "shape": [1]}, "frame_index": {"dtype": "int64", "shape": [1]},
                         "episode_index": {"dtype": "int64", "shape": [1]}, "task_index": {"dtype": "int64", "shape": [1]}}}
    with open(os.path.join(out, "meta", "info.json"), "w") as f:
        json.dump(info, f, indent=1)
    for task, n, tries in report:
        print(f"{task:<28} {n} episodes kept of {tries} expert tries")
    return info

# -----------------------------------------------------------------------------

def main(argv):
    import argparse
    p = argparse.ArgumentParser(description="write expert demonstrations of a simulator")
    sub = p.add_subparsers(dest="env", required=True)
    s = sub.add_parser("synthetic", help="the synthetic tabletop, straight into the prepared format")
    s.add_argument("--out", required=True)
    s.add_argument("--episodes", type=int, default=2000)
    s.add_argument("--objects", type=int, default=3, choices=(1, 2, 3))
    s.add_argument("--image_size", type=int, default=64)
    s.add_argument("--max_token_len", type=int, default=32)
    s.add_argument("--seed", type=int, default=0)
    m = sub.add_parser("metaworld", help="Meta-World's scripted experts as a LeRobot v3.0 dataset")
    m.add_argument("--out", required=True, help="a new or empty directory, or one this command wrote (replaced)")
    m.add_argument("--tasks", default="mt10", help="mt10 | mt50 | comma-separated names (reach-v3,push-v3)")
    m.add_argument("--episodes", type=int, default=50, help="successful episodes per task")
    m.add_argument("--size", "--image_size", dest="size", type=int, default=128, help="rendered image side")
    m.add_argument("--workers", type=int, default=None, help="processes (default: one per CPU, at most 32)")
    m.add_argument("--action_noise", type=float, default=0.0,
                   help="std of Gaussian noise added to the executed dx, dy, dz while the expert's action is recorded")
    m.add_argument("--hold_steps", type=int, default=0,
                   help="steps the expert goes on after its first success (0: the episode ends there)")
    args = p.parse_args(argv)
    t0 = time.time()
    if args.env == "synthetic":
        meta = make_synthetic(args.out, args.episodes, args.image_size, args.seed, args.max_token_len, args.objects)
        print(f"wrote {args.out}: {meta['num_episodes']} episodes, {meta['num_frames']} frames, {time.time() - t0:.1f} s")
    else:
        os.environ.setdefault("MUJOCO_GL", default_gl())
        try:
            info = write_metaworld(args.out, args.tasks, args.episodes, args.size, args.workers, args.action_noise,
                                   args.hold_steps)
        except ValueError as err:
            raise SystemExit(f"sim.py: {err}")
        print(f"wrote {args.out}: {info['total_episodes']} episodes, {info['total_frames']} frames, "
              f"{time.time() - t0:.1f} s; next: python prepare.py --src={args.out} --out=<prepared dir> --tokenizer=words "
              f"--image_size={args.size}")

if __name__ == "__main__":
    main(sys.argv[1:])
