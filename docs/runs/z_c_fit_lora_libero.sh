#!/bin/bash
# Ran 2026-12-05 (session 13) on one H100 as written: docs/logs/fit_2026-12-05_h100_lora32.log, docs/pi05_libero_80gb_2026-12-05_h100.log. memory.py has no LORA_MAX_MICRO since (LoRA fits up to MAX_MICRO).
# (the sed below does nothing now: memory.py has no LORA_MAX_MICRO; a rerun measures the account's current 24 GB picks)
# Prepared 2026-12-05 (session 12) for a device call (issue 18), not run yet.
# 1. Why LoRA at micro-batch 32 ran out of memory under the 24 GB cap (docs/logs/fit_2026-12-05_h100_48_24.log: 22.0 and
#    18.4 GiB predicted; the second may only have inherited the first's memory): with memory.LORA_MAX_MICRO lifted to
#    32, each of the first three 24 GB settings in a process of its own.
# 2. train.py's 80 GB fit with EMA on (config/pi05_libero.py): the new speed model picks micro-batch 32 with ViT and
#    Gemma MLP recompute, 65.9 GiB predicted; the earlier pick (8 x 4, ViT) ran at 43.4 samples/s on the H200.
source docs/closed_loop/device_setup.sh  # T0, el, left
L=$OUT/logs; mkdir -p $L
cp memory.py /tmp/memory.py
sed -i 's/^LORA_MAX_MICRO = 8 /LORA_MAX_MICRO = 32/' memory.py
python3 -c "
import memory, train
conf = dict(train.default_config(), ema=False, lora=True)
for i, c in enumerate(memory.fit_candidates(conf, train.model_config(conf), 23.6)[:3]): print(i, round(c[0]), c[1:4], round(c[4]['peak'], 1))"
for k in 0 1 2; do
  timeout $(left $((120 + 90 * k))) python3 bench.py --fit=True --fit_gpu=24 --fit_top=1 --fit_skip=$k --steps=6 --warmup=2 > $L/lora$k.txt 2>&1
  el "lora $k rc $?"; grep "^| 24\|out of memory\|still allocated" $L/lora$k.txt | tail -n 2
done
cp /tmp/memory.py memory.py
timeout $(left 560) python3 train.py config/pi05_libero.py --gpu_mem_gib=79.1 --init_from=scratch --data_dir=/tmp/syn224 \
  --synthetic_episodes=12 --max_iters=4 --out_dir=/tmp/libero80 > $L/libero80.txt 2>&1
el "libero80 rc $?"; grep "fit for\|iter [0-9]\|done:\|Error" $L/libero80.txt | cut -c1-250 | tail -n 8
cd $OUT && tar czf logs.tgz logs && rm -rf logs
