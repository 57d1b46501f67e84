#!/bin/bash
# Prepared 2026-12-05 (session 11) for the next device call (issue 16), not run yet: config/metaworld.py with the
# convolutional stem at 224 px (14 x 14 tokens per camera instead of 8 x 8; reach's goal ball and the puck are a few
# pixels at 128 px). 224 px was tried once, with the patch stem (c1, 40%), never with the conv stem. One run alone on
# the GPU (at 224 px an iteration costs more; two side by side would not end 6000 iterations in time), train seed 42
# (the default there: 78 and 73%, flow_draws=4 72%, weight decay 0.1 69%), EMA weights, 10 episodes per task.
SIZE=224; TRAIN_END=${TRAIN_END:-460}; EVAL_END=${EVAL_END:-575}  # set first: 'X=1 source f' would not keep f's X
source docs/closed_loop/mt10_call.sh
train_bg A 42 $TRAIN_END --image_size=224
wait
eval_last A 16 $EVAL_END
report A
