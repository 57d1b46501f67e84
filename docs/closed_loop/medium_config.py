"""Adds the 57M-parameter 'medium' shape to model.configs in the working tree it runs in (a device copy; never
committed): SigLIP 384 x 8, Gemma 512 x 8, expert 256. Written out inline in z_b_mt10_medium.sh and z_h_medium_nan.sh
as they ran; used by z_i_mt10_medium_lr.sh until 'medium' joined model.configs (2026-12-05 session 14).
    python3 docs/closed_loop/medium_config.py"""
s = open('model.py').read()
anchor = "    'small': Pi05Config("
assert anchor in s and "'medium'" not in s
s = s.replace(anchor, "    'medium': Pi05Config(image_size=128, patch=16, vit_width=384, vit_depth=8, vit_mlp=1536, vit_heads=6, width=512,\n"
              "                         depth=8, mlp=2048, vocab=1024, expert_width=256, expert_mlp=1024, heads=8, head_dim=64,\n"
              "                         action_horizon=10, max_token_len=48),\n" + anchor, 1)
open('model.py', 'w').write(s)
