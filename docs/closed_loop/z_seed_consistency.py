"""Do the same evaluation seeds fail in every MT10 run? For reach, push and pick-place: per evaluation seed, how many
of the MT10 evaluations with the conv stem (sessions 8-12: the v_*, w_*, z_* episode CSVs of MT10 runs) solved it.
    python docs/closed_loop/z_seed_consistency.py"""
import collections
import csv
import glob
import os

HERE = os.path.dirname(os.path.abspath(__file__))
runs = [f for f in sorted(glob.glob(os.path.join(HERE, '[vwz]_*episodes.csv')))]
wins = collections.defaultdict(dict)
for f in runs:
    rows = list(csv.DictReader(open(f)))
    if len({r['task'] for r in rows}) < 10:  # MT10 evaluations only
        continue
    for r in rows:
        wins[(r['task'], int(r['seed']))][os.path.basename(f)] = int(r['success'])
n = len({f for v in wins.values() for f in v})
print(f'{n} MT10 evaluations: ' + ', '.join(sorted({f[:-len("_episodes.csv")] for v in wins.values() for f in v})))
for task in ('reach-v3', 'push-v3', 'pick-place-v3'):
    seeds = sorted(s for t, s in wins if t == task)
    print(f'{task}: successes of {n} per evaluation seed: ' +
          ', '.join(f'{s}: {sum(wins[(task, s)].values())}' for s in seeds))
