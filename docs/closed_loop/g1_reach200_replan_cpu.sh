#!/bin/bash
# session 2026-12-02 (CPU, torch 2.13.0+cpu, MUJOCO_GL=osmesa): e4's 200-demonstration reach-v3 policy (raw weights,
# /tmp/e3/out_reach200 from e4_reach_nostate_200_cpu.sh) on e4's first 30 evaluation seeds, executing 1, 2 or 10
# actions of each chunk before asking again (e4: 5, the protocol, 17 of 30); and e3's 50-demonstration policy
# (/tmp/e3/out_reach, 9 of 30 at 5) executing 10. Outputs: /tmp/g1/*/episodes.csv, copied by hand to
# g1_reach200_replan*_episodes.csv and g1_reach50_replan10_episodes.csv.
cd "$(dirname "$0")/../.."  # the repository root
export MUJOCO_GL=osmesa OMP_NUM_THREADS=1
for r in 1 2 10; do
  python eval.py --env=metaworld --tasks=reach-v3 --ckpt=/tmp/e3/out_reach200 --device=cpu --trials=30 --weights=model \
    --replan=$r --out_dir=/tmp/g1/reach200_replan$r
done
python eval.py --env=metaworld --tasks=reach-v3 --ckpt=/tmp/e3/out_reach --device=cpu --trials=30 --weights=model \
  --replan=10 --out_dir=/tmp/g1/reach50_replan10
