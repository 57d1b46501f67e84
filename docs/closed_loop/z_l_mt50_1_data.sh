#!/bin/bash
# Prepared 2026-12-05 (session 13) for the device (issue 16: "once MT10 works, run MT50 the same way"); ran 2026-12-06 (session 17) on an H100: docs/closed_loop/af_results.txt.
# MT50 does not fit one call, so two calls chained on the same warm machine (within its 30 s idle release; what a
# call leaves under data_cache/ and out/ stays on a warm machine): this one writes and prepares MT50 x 50
# demonstrations at 128 px (2500 episodes; MT10's 500 took ~45 s with 16 processes, so ~4-5 min), then
# z_l_mt50_2_train_eval.sh trains config/metaworld.py on them as on MT10 (6000 iterations, seed 42) and evaluates
# 10 episodes per task (500).
# Dry-checked on a 2-core CPU (2026-12-05, MUJOCO_GL=osmesa): sim.py metaworld --tasks=mt50 --episodes=1 --size=64 wrote all 50
# tasks (soccer and stick-pull needed a second expert try; 104 s), prepare.py took them (50 task prompts, none cut at
# 48 tokens), and eval.py --env=metaworld --tasks=mt50 --baseline=expert --trials=1 solved 49 of 50.
# SIM_FLAGS: more sim.py flags (z_ax_mt50_recipe.sh sets --action_noise=0.3).
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
timeout $(left 540) python3 sim.py metaworld --out=data_cache/mt50_lerobot --tasks=mt50 --episodes=50 --size=128 \
  --workers=16 ${SIM_FLAGS:-} > $L/gen.txt 2>&1; el "written rc $?"
timeout $(left 590) python3 prepare.py --src=data_cache/mt50_lerobot --out=data_cache/mt50 --tokenizer=words \
  --image_size=128 --max_token_len=48 --workers=16 >> $L/gen.txt 2>&1; el "prepared rc $?"
tr '\r' '\n' < $L/gen.txt | grep "kept of\|wrote\|cut to" | cut -c1-200
cd $OUT && tar czf logs.tgz logs && rm -rf logs
