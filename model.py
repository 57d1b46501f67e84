"""
Pi0.5 (openpi's pi05): SigLIP So400m/14 + Gemma 2B + a Gemma-300M action expert trained with flow matching.

The math is openpi's JAX model (docs/numerics.md says what is matched and why): fp32 RoPE angles and rotation, fp32
attention logits and softmax, fp32 RMSNorm statistics, bf16 activations. Parameters may be fp32 (master weights) or
bf16; every Linear computes in its input's dtype. Weights load from openpi PyTorch and LeRobot `model.safetensors`.

Shape letters: B batch, N camera slots, S image side, P patches per image, L prompt slots, H action horizon,
Tp = N*P + L prefix tokens, T = Tp + H tokens, D width, Hq query heads, Dh head dim, A action dim (32).

    model = build('tiny')
    loss = model(batch)                       # batch: images (B,N,3,S,S), image_mask, tokens, token_mask, actions
    actions = model.sample_actions(batch)     # 10 Euler steps with a prefix KV cache
    apply_recompute(model, 'vit')             # training wrappers, applied from outside in this order
    apply_compile(model)                      #   (after fp8.convert_to_fp8, before DDP)

This file holds no training logic: no optimizer, no DDP, no logging, no global torch settings.
"""
import math
import os
import re
from dataclasses import dataclass, replace

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

import decode_attn
import flex_mask
import small_gemm

# -----------------------------------------------------------------------------
# configs


@dataclass(frozen=True)
class Pi05Config:
    image_size: int = 224      # S
    patch: int = 14
    vit_width: int = 1152      # SigLIP So400m/14
    vit_depth: int = 27
    vit_mlp: int = 4304
    vit_heads: int = 16
    width: int = 2048          # Gemma 2B
    depth: int = 18            # shared by both streams: layers are paired 1:1
    mlp: int = 16384
    vocab: int = 257152
    expert_width: int = 1024   # Gemma 300M action expert
    expert_mlp: int = 4096
    heads: int = 8             # both streams: 8 query heads, 1 shared KV head, head dim 256
    kv_heads: int = 1
    head_dim: int = 256
    action_dim: int = 32       # A
    action_horizon: int = 50   # H
    max_token_len: int = 200   # L
    camera_slots: int = 3      # N at most: openpi's base_0_rgb, left_wrist_0_rgb, right_wrist_0_rgb
    vision_stem: str = 'patch'  # 'patch': SigLIP's patch conv; 'conv': stride-2 3x3 convs down to the same token grid

    @property
    def patches(self):
        return (self.image_size // self.patch) ** 2


configs = {
    'pi05': Pi05Config(),
    'tiny': Pi05Config(image_size=28, patch=7, vit_width=32, vit_depth=2, vit_mlp=64, vit_heads=2, width=64, depth=3,
                       mlp=128, vocab=1024, expert_width=32, expert_mlp=64, heads=2, head_dim=16,
                       action_horizon=5, max_token_len=24),
    'demo': Pi05Config(image_size=64, patch=8, vit_width=128, vit_depth=3, vit_mlp=256, vit_heads=4, width=128,
                       depth=4, mlp=384, vocab=1024, expert_width=64, expert_mlp=192, heads=4, head_dim=32,
                       action_horizon=10, max_token_len=32),
    'small': Pi05Config(image_size=128, patch=16, vit_width=256, vit_depth=6, vit_mlp=1024, vit_heads=4, width=384,
                        depth=6, mlp=1536, vocab=1024, expert_width=192, expert_mlp=768, heads=6, head_dim=64,
                        action_horizon=10, max_token_len=48),
    'medium': Pi05Config(image_size=128, patch=16, vit_width=384, vit_depth=8, vit_mlp=1536, vit_heads=6, width=512,
                         depth=8, mlp=2048, vocab=1024, expert_width=256, expert_mlp=1024, heads=8, head_dim=64,
                         action_horizon=10, max_token_len=48),
}

# -----------------------------------------------------------------------------
# building blocks


class Linear(nn.Linear):
    """nn.Linear that computes in its input's dtype, so fp32 master weights give bf16 matmuls (JAX casts at use)."""
    small = False  # serving: few rows run small_gemm.py's kernel (use_small_gemm; Linears without a bias only)

    def forward(self, x):
        if self.small and self.bias is None:
            return project(x, self.weight, True)
        b = None if self.bias is None else self.bias.to(x.dtype)
        return F.linear(x, self.weight.to(x.dtype), b)


def cat_linear(x, linears):
    """Training (cat_projections): Linears that read the same x as one GEMM over their weights concatenated at each
    call -> their outputs; autograd hands each weight its slice of the one weight-gradient GEMM. With fp32 master
    weights the concatenation can share a kernel with the cast to x's dtype that each Linear does anyway; with bf16
    parameters it is one more copy of the weights each call."""
    assert len({l.bias is None for l in linears}) == 1, 'cat_linear: all the Linears have a bias, or none'
    w = torch.cat([l.weight.to(x.dtype) for l in linears])
    b = None if linears[0].bias is None else torch.cat([l.bias.to(x.dtype) for l in linears])
    return F.linear(x, w, b).split([l.out_features for l in linears], dim=-1)


def catted(m, linears):
    """Whether m runs `linears` through cat_linear: cat_projections set it and they are plain Linears (fp8's and
    LoRA's Linears run one by one)."""
    return m.cat and all(type(l) is Linear for l in linears)


def project(x, w, small=False):
    """x @ w^T in x's dtype, no bias (the serving GEMMs); small (use_small_gemm): where small_gemm.usable allows (few
    rows, bf16 on a GPU, a weight shape it has a configuration for) small_gemm.py's kernel instead of cuBLAS."""
    w = w.to(x.dtype)
    return small_gemm.linear(x, w) if small and small_gemm.usable(x, w) else F.linear(x, w)


class LayerNorm(nn.LayerNorm):
    """SigLIP LayerNorm (eps 1e-6) with fp32 statistics, output in the input dtype."""
    def __init__(self, dim):
        super().__init__(dim, eps=1e-6)

    def forward(self, x):
        return F.layer_norm(x.float(), self.normalized_shape, self.weight.float(), self.bias.float(), self.eps).to(x.dtype)


def rms(x):
    """x * rsqrt(mean(x^2) + 1e-6) in fp32 (gemma.py RMSNorm)."""
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)


class RMSNorm(nn.Module):
    """Gemma RMSNorm with the (1 + w) multiplier, scaled in fp32, output in the input dtype."""
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return (rms(x) * (1 + self.weight.float())).to(x.dtype)


class AdaRMSNorm(nn.Module):
    """adaRMSNorm of the pi05 expert: Dense(cond) -> scale, shift, gate (in that order); the gate is raw."""
    def __init__(self, dim, cond_dim):
        super().__init__()
        self.dense = Linear(cond_dim, 3 * dim)

    def forward(self, x, cond, mod=None):
        """mod: this norm's Dense output for cond, when computed ahead (Pi05.step_conditions)."""
        if mod is None:
            mod = self.dense(cond.to(x.dtype))  # JAX: Dense in x's dtype
        if mod.ndim == 2:  # cond (B, W): one condition for all tokens
            mod = mod[:, None, :]
        elif mod.shape[1] != x.shape[1]:  # cond (B, K, W): one per block of T / K consecutive tokens (flow draws)
            mod = mod.repeat_interleave(x.shape[1] // mod.shape[1], 1)
        scale, shift, gate = mod.chunk(3, dim=-1)
        return (rms(x) * (1 + scale.float()) + shift.float()).to(x.dtype), gate


class GemmaMLP(nn.Module):
    small = False  # serving: the fused gate/up GEMM through small_gemm.py where it can (use_small_gemm)
    cat = False  # training: gate/up as one GEMM (cat_projections)

    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj, self.up_proj = Linear(dim, hidden, bias=False), Linear(dim, hidden, bias=False)
        self.down_proj = Linear(hidden, dim, bias=False)
        self.register_buffer('fused', None, persistent=False)  # [gate; up] weights as one tensor (fuse_projections)

    def forward(self, x):
        if self.fused is not None and not self.gate_proj.weight.requires_grad:  # serving (fuse_projections)
            gate, up = project(x, self.fused, self.small).chunk(2, dim=-1)
        elif catted(self, (self.gate_proj, self.up_proj)):
            gate, up = cat_linear(x, (self.gate_proj, self.up_proj))
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(F.gelu(gate, approximate='tanh') * up)


class GemmaAttention(nn.Module):
    """Projections only: the attention itself is joint over both streams (JointLayer)."""
    small = False  # serving: the fused q/k/v GEMM through small_gemm.py where it can (use_small_gemm)
    cat = False  # training: q/k/v as one GEMM (cat_projections)

    def __init__(self, dim, cfg):
        super().__init__()
        self.q_proj = Linear(dim, cfg.heads * cfg.head_dim, bias=False)
        self.k_proj = Linear(dim, cfg.kv_heads * cfg.head_dim, bias=False)
        self.v_proj = Linear(dim, cfg.kv_heads * cfg.head_dim, bias=False)
        self.o_proj = Linear(cfg.heads * cfg.head_dim, dim, bias=False)
        self.register_buffer('fused', None, persistent=False)  # [q; k; v] weights as one tensor (fuse_projections)


class GemmaLayer(nn.Module):
    """One stream's half of a joint layer; openpi key names (self_attn.*, mlp.*, input_layernorm, ...). The expert's
    norms are adaptive (cond_dim given), the VLM's plain."""
    def __init__(self, dim, hidden, cfg, cond_dim=None):
        super().__init__()
        norm = (lambda: AdaRMSNorm(dim, cond_dim)) if cond_dim else (lambda: RMSNorm(dim))
        self.input_layernorm, self.post_attention_layernorm = norm(), norm()
        self.self_attn = GemmaAttention(dim, cfg)
        self.mlp = GemmaMLP(dim, hidden)


def rope_tables(pos, head_dim):
    """fp32 RoPE angles as JAX computes them: pos / 10000^(2i/Dh). pos (B, T) -> cos, sin (B, T, 1, Dh/2)."""
    exponent = 2.0 * torch.arange(head_dim // 2, dtype=torch.float32, device=pos.device) / head_dim
    radians = pos.float()[..., None] / (10000.0 ** exponent)
    return radians.cos()[:, :, None], radians.sin()[:, :, None]


def pad_keys(k, v, pad):
    """k, v (B, L, heads, Dh) with `pad` zero positions appended (the prefix cache's padding; 0: unchanged)."""
    if not pad:
        return k, v
    return F.pad(k, (0, 0, 0, 0, 0, pad)), F.pad(v, (0, 0, 0, 0, 0, pad))


def apply_rope(x, cos, sin):
    """Rotate-half RoPE in fp32, rounded once at the end (gemma.py _apply_rope). x: (B, T, heads, Dh)."""
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


def repeat_kv(k, v, heads):
    """K/V (B, Hkv, T, Dh) repeated to `heads` heads: query head i reads K/V head i // (heads / Hkv), as Gemma's
    repeat_kv and sdpa's enable_gqa."""
    return k.repeat_interleave(heads // k.shape[1], 1), v.repeat_interleave(heads // v.shape[1], 1)


def attention(q, k, v, mask, impl):
    """q (B, Tq, Hq, Dh), k/v (B, Tk, Hkv, Dh) -> (B, Tq, Hq*Dh). mask: additive (B,1,Tq,Tk) or a BlockMask (flex)."""
    B, Tq, Hq, Dh = q.shape
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, heads, T, Dh)
    if impl == 'eager':  # the reference: repeat_kv, materialised fp32 logits + additive mask, fp32 softmax
        k, v = repeat_kv(k, v, Hq)
        logits = torch.matmul(q.float(), k.float().transpose(-1, -2)) * Dh ** -0.5 + mask
        o = torch.matmul(torch.softmax(logits, dim=-1).to(v.dtype), v)
    elif impl == 'sdpa':
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=Dh ** -0.5, enable_gqa=True)
    elif impl == 'grouped':  # short queries (the denoising steps): the query heads of one K/V head stacked as the rows
        # of one matrix, so each K/V head is read once by two small GEMMs (no repeated K/V, no attention kernel that
        # gives 50 queries one block per head); logits, mask and softmax in fp32 as the reference. The rows are in
        # (query, head) order, the layout q arrives in and o leaves in: with one K/V head (pi05) neither is copied
        Hkv, Tk = k.shape[1], k.shape[2]
        G = Hq // Hkv
        qg = q.transpose(1, 2).reshape(B, Tq, Hkv, G, Dh).transpose(1, 2).reshape(B, Hkv, Tq * G, Dh)
        grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad)
        if q.is_cuda and q.dtype == k.dtype == torch.bfloat16 and not grad:
            # plain sampling: bf16 products summed in fp32 by the tensor cores give the reference's fp32 logits
            # (a bf16 product is exact in fp32) without casting q and k; this bmm has no derivative, so a guided
            # (real-time chunking) call, which differentiates through q and k, takes the fp32 product below
            logits = torch.bmm(qg.flatten(0, 1), k.flatten(0, 1).transpose(-1, -2), out_dtype=torch.float32)
        else:
            logits = torch.matmul(qg.float(), k.float().transpose(-1, -2))
        p = torch.softmax(logits.view(B, Hkv, Tq, G, Tk) * Dh ** -0.5 + mask[:, :, :, None], dim=-1).to(v.dtype)
        o = torch.matmul(p.view(B, Hkv, Tq * G, Tk), v)
        return o.view(B, Hkv, Tq, G, Dh).transpose(1, 2).reshape(B, Tq, Hq * Dh)
    elif impl == 'flex':
        from torch.nn.attention.flex_attention import flex_attention
        if Tq < 128 and k.shape[1] != Hq:  # short queries (flex decoding) would pack a K/V head's query heads into one
            # row block (50 actions x 8 heads: 512 rows of head dim 256); with K/V repeated each head is its own block
            k, v = repeat_kv(k, v, Hq)
        o = flex_attention(q, k, v, block_mask=mask, scale=Dh ** -0.5, enable_gqa=k.shape[1] != Hq)
    else:
        raise ValueError(f"unknown attention implementation {impl!r}: use 'eager', 'sdpa', 'flex' or 'grouped'")
    return o.transpose(1, 2).reshape(B, Tq, Hq * Dh)


DENOISE_ATTN = (None, 'sdpa', 'eager', 'flex', 'grouped', 'triton')  # sample_actions' denoise_attn values
PREFIX_ATTN = (None, 'sdpa', 'eager', 'grouped')  # and its prefix_attn values
GROUPED_MATH = ('grouped', 'triton')  # the choices whose math is 'grouped' (the cache padding, guided steps)


def check_choice(key, value, allowed):
    """A one-line error naming the key, the value and the allowed values (denoise_attn, prefix_attn)."""
    if value not in allowed:
        raise ValueError(f"{key}={value!r}: use one of {', '.join(map(repr, allowed))}")


def qkv(layer, x, cos, sin, head_dim, cond=None, mod=None):
    """One stream's pre-attention norm, projections and RoPE -> q, k, v (B, T, heads, Dh) and the adaRMS gate."""
    B, T, _ = x.shape
    h, gate = layer.input_layernorm(x, cond, mod) if cond is not None else (layer.input_layernorm(x), None)
    a = layer.self_attn
    if a.fused is not None and not a.q_proj.weight.requires_grad:  # serving (fuse_projections)
        q, k, v = project(h, a.fused, a.small).split([a.q_proj.out_features, a.k_proj.out_features,
                                                      a.v_proj.out_features], dim=-1)
    elif catted(a, (a.q_proj, a.k_proj, a.v_proj)):
        q, k, v = cat_linear(h, (a.q_proj, a.k_proj, a.v_proj))
    else:
        q, k, v = a.q_proj(h), a.k_proj(h), a.v_proj(h)
    q, k, v = (y.view(B, T, -1, head_dim) for y in (q, k, v))
    return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v, gate


def prefix_out(vlm, xp, o):
    """The VLM stream after attention: o_proj and MLP with plain residuals."""
    xp = xp + vlm.self_attn.o_proj(o)
    return xp + vlm.mlp(vlm.post_attention_layernorm(xp))


def suffix_out(expert, xs, o, gate, cond, mod=None):
    """The expert stream after attention: o_proj and MLP with gated residuals (x + y * gate)."""
    xs = xs + expert.self_attn.o_proj(o) * gate
    h, gate2 = expert.post_attention_layernorm(xs, cond, mod)
    return xs + expert.mlp(h) * gate2


class JointLayer(nn.Module):
    """One decoder layer of both streams: own norms/QKV, one joint attention over [prefix; suffix], own o_proj/MLP.
    Everything that differs between layers (weights, masks, RoPE tables) reaches forward as tensors, so all layers
    of this class share one compiled graph."""
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.vlm = GemmaLayer(cfg.width, cfg.mlp, cfg)
        self.expert = GemmaLayer(cfg.expert_width, cfg.expert_mlp, cfg, cond_dim=cfg.expert_width)

    def attend(self, xp, xs, cond, cos, sin, mask, attn_impl):
        """Norms + QKV + RoPE + the joint attention (a recompute unit of its own) -> outputs of both streams, gate."""
        Lp, Dh = xp.shape[1], self.cfg.head_dim
        qp, kp, vp, _ = qkv(self.vlm, xp, cos[:, :Lp], sin[:, :Lp], Dh)
        qs, ks, vs, gate = qkv(self.expert, xs, cos[:, Lp:], sin[:, Lp:], Dh, cond)
        o = attention(torch.cat([qp, qs], 1), torch.cat([kp, ks], 1), torch.cat([vp, vs], 1), mask, attn_impl)
        return o[:, :Lp], o[:, Lp:], gate

    def forward(self, xp, xs, cond, cos, sin, mask, attn_impl):
        op, os_, gate = self.attend(xp, xs, cond, cos, sin, mask, attn_impl)
        return prefix_out(self.vlm, xp, op), suffix_out(self.expert, xs, os_, gate, cond)

    # inference: the prefix pass and a denoising step, one layer each (compile_inference compiles them)

    def prefix_step(self, xp, cos, sin, mask, attn_impl, last=False, pad=0):
        """The VLM stream over the prefix -> (its output, post-RoPE k, v); the last layer's output feeds nothing.
        pad: zero keys and values appended to the k, v returned for the cache (Pi05.prefix_cache), inside this step
        so that a compiled step writes them with its own kernels rather than eager fills and copies after it."""
        if last:
            B, Lp, _ = xp.shape
            h = self.vlm.input_layernorm(xp)
            k = apply_rope(self.vlm.self_attn.k_proj(h).view(B, Lp, -1, self.cfg.head_dim), cos, sin)
            return xp, *pad_keys(k, self.vlm.self_attn.v_proj(h).view(B, Lp, -1, self.cfg.head_dim), pad)
        q, k, v, _ = qkv(self.vlm, xp, cos, sin, self.cfg.head_dim)
        return prefix_out(self.vlm, xp, attention(q, k, v, mask, attn_impl)), *pad_keys(k, v, pad)

    def denoise_step(self, xs, kp, vp, cond, cos, sin, mask, attn_impl, mods=(None, None)):
        """The expert stream over the action tokens, attending to the cached prefix k, v and to itself. mods: the
        two adaRMS norms' Dense outputs for cond, computed ahead for all steps of a call (Pi05.step_conditions)."""
        q, k, v, gate = qkv(self.expert, xs, cos, sin, self.cfg.head_dim, cond, mods[0])
        if attn_impl == 'triton' and decode_attn.usable(q):  # one kernel reading the prefix and action keys in place
            o = decode_attn.attention(q, kp, vp, k, v, mask)
        else:  # 'triton' without its kernel (CPU, or a guided step's gradient) computes the same as 'grouped'
            impl = 'grouped' if attn_impl == 'triton' else attn_impl
            o = attention(q, torch.cat([kp, k], 1), torch.cat([vp, v], 1), mask, impl)
        return suffix_out(self.expert, xs, o, gate, cond, mods[1])


class LastJointLayer(JointLayer):
    """The last layer with the work whose result feeds nothing removed: the prefix only supplies K/V, so its q_proj,
    o_proj, post-attention norm and MLP (and the prefix final norm) are skipped, and only action queries attend."""
    def attend(self, xp, xs, cond, cos, sin, mask, attn_impl):
        B, Lp, _ = xp.shape
        Dh = self.cfg.head_dim
        h = self.vlm.input_layernorm(xp)
        kp = apply_rope(self.vlm.self_attn.k_proj(h).view(B, Lp, -1, Dh), cos[:, :Lp], sin[:, :Lp])
        vp = self.vlm.self_attn.v_proj(h).view(B, Lp, -1, Dh)
        qs, ks, vs, gate = qkv(self.expert, xs, cos[:, Lp:], sin[:, Lp:], Dh, cond)
        return None, attention(qs, torch.cat([kp, ks], 1), torch.cat([vp, vs], 1), mask, attn_impl), gate

    def forward(self, xp, xs, cond, cos, sin, mask, attn_impl):
        _, os_, gate = self.attend(xp, xs, cond, cos, sin, mask, attn_impl)
        return xp, suffix_out(self.expert, xs, os_, gate, cond)

# -----------------------------------------------------------------------------
# SigLIP So400m/14 (no pooling head)


class SiglipAttention(nn.Module):
    cat = False  # training: q/k/v as one GEMM (cat_projections)

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (Linear(dim, dim) for _ in range(4))
        self.register_buffer('fused', None, persistent=False)  # [q; k; v] weights as one tensor (fuse_projections)
        self.register_buffer('fused_bias', None, persistent=False)  # and their biases

    def forward(self, x):
        B, P, D = x.shape
        if self.fused is not None and not self.q_proj.weight.requires_grad:  # serving (fuse_projections): one GEMM
            qkv = F.linear(x, self.fused.to(x.dtype), self.fused_bias.to(x.dtype))
            q, k, v = qkv.view(B, P, 3 * self.heads, -1).transpose(1, 2).chunk(3, dim=1)
        elif catted(self, (self.q_proj, self.k_proj, self.v_proj)):
            q, k, v = (p.view(B, P, self.heads, -1).transpose(1, 2)
                       for p in cat_linear(x, (self.q_proj, self.k_proj, self.v_proj)))
        else:
            q, k, v = (p(x).view(B, P, self.heads, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        return self.out_proj(sdpa_without_cudnn_nan(q, k, v).transpose(1, 2).reshape(B, P, D))


def sdpa_without_cudnn_nan(q, k, v):
    """F.scaled_dot_product_attention, but on CUDA under a gradient at key lengths of 64 mod 128 (8 x 8 tokens: 128 px
    images in 16 px tokens) with cuDNN's kernel left out: its SM90 backward, torch's default on H100/H200, lets the
    zero-filled keys past the end into exp(0 - logsumexp), which overflows into NaN query gradients for rows whose
    logsumexp is below -88.7 (pytorch issue 196678, cudnn-frontend PR 628). Runs at 128 px on an H100 had steps whose
    non-finite gradients were only those of 4 of an early SigLIP layer's 16 tensors and of what lies before it, as a
    NaN query gradient there would make (query projection and first norm)."""
    if q.is_cuda and torch.is_grad_enabled() and k.shape[-2] % 128 == 64:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
            return F.scaled_dot_product_attention(q, k, v)
    return F.scaled_dot_product_attention(q, k, v)


class SiglipMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.fc2 = Linear(dim, hidden), Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate='tanh'))


class SiglipLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layer_norm1, self.layer_norm2 = LayerNorm(cfg.vit_width), LayerNorm(cfg.vit_width)
        self.self_attn = SiglipAttention(cfg.vit_width, cfg.vit_heads)
        self.mlp = SiglipMLP(cfg.vit_width, cfg.vit_mlp)

    def forward(self, x):
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.mlp(self.layer_norm2(x))


class SiglipEmbeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        if cfg.vision_stem not in ('patch', 'conv'):
            raise ValueError(f"vision_stem={cfg.vision_stem!r}: expected 'patch' or 'conv'")
        if cfg.vision_stem == 'conv':  # the stem does the striding; the patch conv mixes its channels (1x1)
            self.conv_stem = ConvStem(cfg)
            self.patch_embedding = nn.Conv2d(cfg.vit_width // 2, cfg.vit_width, 1)
        else:
            self.conv_stem = None
            self.patch_embedding = nn.Conv2d(3, cfg.vit_width, cfg.patch, stride=cfg.patch)
        self.position_embedding = nn.Embedding(cfg.patches, cfg.vit_width)


class ConvStem(nn.Sequential):
    """Not in pi05 (which loads SigLIP's pretrained patch conv): for training from scratch on little data, log2(patch)
    stride-2 3x3 convolutions with GELUs, channels doubling up to vit_width/2, ahead of a 1x1 patch conv (Xiao et al.
    2021, 'Early convolutions help transformers see better'). The same token grid as the patch conv's."""
    def __init__(self, cfg):
        chans = ConvStem.channels(cfg)
        layers = []
        for cin, cout in zip(chans, chans[1:]):
            layers += [nn.Conv2d(cin, cout, 3, stride=2, padding=1), nn.GELU()]
        super().__init__(*layers)

    @staticmethod
    def channels(cfg):
        """[3, ..., vit_width/2]: the input and output channels of the log2(patch) convolutions."""
        n = cfg.patch.bit_length() - 1
        if cfg.patch != 2 ** n:
            raise ValueError(f"vision_stem='conv' needs a power-of-two patch, got patch={cfg.patch}")
        return [3] + [cfg.vit_width >> (n - i) for i in range(n)]


class SiglipEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList(SiglipLayer(cfg) for _ in range(cfg.vit_depth))


class Siglip(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embeddings = SiglipEmbeddings(cfg)
        self.encoder = SiglipEncoder(cfg)
        self.post_layernorm = LayerNorm(cfg.vit_width)

    def forward(self, img, dtype):
        """img (n, 3, S, S) float in [-1, 1] -> (n, P, vit_width). Patch conv and position add in fp32 (openpi)."""
        e, x = self.embeddings, img.float()
        if e.conv_stem is not None:
            x = e.conv_stem(x)
        x = F.conv2d(x, e.patch_embedding.weight.float(), e.patch_embedding.bias.float(), stride=e.patch_embedding.stride)
        # one row per patch in memory: the transposed view of the conv's channel planes would otherwise pass its
        # layout on through every residual add, and each LayerNorm would reduce over strided channels (on an H100,
        # inductor split each into three kernels: ~17 us per layer for its two norms, 27 layers; docs/inference.md)
        x = (x.flatten(2).transpose(1, 2) + e.position_embedding.weight.float()).to(dtype).contiguous()
        for layer in self.encoder.layers:
            x = layer(x)
        return self.post_layernorm(x)

# -----------------------------------------------------------------------------
# the action/time heads (each a small compiled graph of its own)


def posemb_sincos(t, dim, min_period=4e-3, max_period=4.0):
    """Sinusoidal time embedding, sin block then cos block (pi0.py posemb_sincos). t (B,) -> (B, dim) fp32."""
    fraction = torch.linspace(0.0, 1.0, dim // 2, dtype=torch.float64, device=t.device)
    omega = (2 * math.pi / (min_period * (max_period / min_period) ** fraction)).float()
    x = t.float()[:, None] * omega[None, :]
    return torch.cat([x.sin(), x.cos()], dim=-1)


class ActionIn(nn.Module):
    """Noisy actions -> action tokens, flow time -> the adaRMS condition; fp32 as in JAX, swish after both time
    layers. Its parameters keep openpi's top-level names (action_in_proj, time_mlp_in, time_mlp_out)."""
    def __init__(self, cfg):
        super().__init__()
        w = cfg.expert_width
        self.action_in_proj = Linear(cfg.action_dim, w)
        self.time_mlp_in, self.time_mlp_out = Linear(w, w), Linear(w, w)

    def time_cond(self, t):
        """flow time (B,) -> the adaRMS condition (B, W) fp32."""
        return F.silu(self.time_mlp_out(F.silu(self.time_mlp_in(posemb_sincos(t, self.action_in_proj.out_features)))))

    def forward(self, x_t, t, dtype, cond=None):
        """-> action tokens (B, H, W) in dtype and the condition (given, or computed from t)."""
        return self.action_in_proj(x_t.float()).to(dtype), self.time_cond(t) if cond is None else cond


class ActionOut(nn.Module):
    """The expert's final adaRMSNorm (gate dropped) and action_out_proj in fp32 -> v_t (B, H, A)."""
    def __init__(self, cfg):
        super().__init__()
        self.norm = AdaRMSNorm(cfg.expert_width, cfg.expert_width)  # openpi: gemma_expert.model.norm
        self.action_out_proj = Linear(cfg.expert_width, cfg.action_dim)

    def forward(self, xs, cond, mod=None):
        h, p = self.norm(xs, cond, mod)[0].float(), self.action_out_proj
        if torch.compiler.is_compiling() and not torch.is_grad_enabled() and h.numel() <= 64 * h.shape[-1]:
            # compiled serving at batch 1: the same fp32 sums as a reduction inductor writes (one H100: 2.8 us against
            # cuBLAS's split-K sgemm at 20.1 us for 50 x 1024 -> 32, once per denoising step; docs/inference.md)
            return (h[..., None, :] * p.weight.float()).sum(-1) + p.bias.float()
        return p(h)

# -----------------------------------------------------------------------------
# Pi0.5


def to_model_images(images):
    """uint8 [0, 255] -> float32 [-1, 1] (openpi Observation.from_dict: x / 255 * 2 - 1); floats pass through."""
    return images.float() / 255.0 * 2.0 - 1.0 if images.dtype == torch.uint8 else images


def sample_time(n, generator=None, device=None):
    """Flow time t = 0.999 * Beta(1.5, 1) + 0.001 (openpi pi0.py sample_time). Beta(1.5, 1) has CDF x^1.5, so
    U^(2/3) samples it exactly, on the device, without a host sync."""
    return torch.rand(n, generator=generator, device=device) ** (2.0 / 3.0) * 0.999 + 0.001


class Pi05(nn.Module):
    """attn: 'eager' (the reference), 'sdpa' or 'flex'. skip_unused=False and batched_vision=False are reference
    paths kept for the equivalence tests and the benchmark's community rows (the full last layer; one SigLIP call
    per camera, as openpi loops)."""

    def __init__(self, cfg, attn='eager', compute_dtype=torch.bfloat16, skip_unused=True, batched_vision=True):
        super().__init__()
        self.cfg, self.attn, self.compute_dtype = cfg, attn, compute_dtype
        self.skip_unused, self.batched_vision = skip_unused, batched_vision
        self.vision = Siglip(cfg)
        self.projector = Linear(cfg.vit_width, cfg.width)
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.width)
        self.layers = nn.ModuleList(JointLayer(cfg) for _ in range(cfg.depth - 1))
        self.layers.append(LastJointLayer(cfg) if skip_unused else JointLayer(cfg))
        self.vlm_norm = RMSNorm(cfg.width)  # loaded and saved, unused by the action loss
        self.action_in = ActionIn(cfg)
        self.action_out = ActionOut(cfg)
        for p in self.unused_parameters():  # no gradient can reach them: frozen, so DDP needs no unused-param search
            p.requires_grad_(False)
        if not any(p.is_meta for p in self.parameters()):
            self.init_weights()

    def unused_parameters(self):
        last = self.layers[-1].vlm
        mods = [last.self_attn.q_proj, last.self_attn.o_proj, last.post_attention_layernorm, last.mlp, self.vlm_norm]
        return [p for m in mods for p in m.parameters()]

    @torch.no_grad()
    def init_weights(self):
        """Fresh init after openpi's JAX init: lecun-normal kernels, zero biases, RMSNorm weight 0 with the (1 + w)
        form, adaRMS Dense zero (expert blocks start as identity), zero image projector (img/head)."""
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                fan_in = m.weight[0].numel()
                nn.init.trunc_normal_(m.weight, std=fan_in ** -0.5, a=-2 * fan_in ** -0.5, b=2 * fan_in ** -0.5)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, LayerNorm):
                nn.init.ones_(m.weight), nn.init.zeros_(m.bias)
            elif isinstance(m, RMSNorm):
                nn.init.zeros_(m.weight)
        for m in self.modules():  # after the loop above, which would re-initialise the Dense inside
            if isinstance(m, AdaRMSNorm):
                nn.init.zeros_(m.dense.weight), nn.init.zeros_(m.dense.bias)
        nn.init.normal_(self.vision.embeddings.position_embedding.weight, std=self.cfg.vit_width ** -0.5)
        nn.init.normal_(self.embed_tokens.weight, std=self.cfg.width ** -0.5)
        nn.init.zeros_(self.projector.weight)

    def set_param_dtype(self, dtype, inference=False):
        """Pure-bf16 training (openpi's PyTorch trainer): cast every parameter except those openpi keeps in fp32
        (Gemma norms incl. the adaRMS Dense, SigLIP patch/position embeddings, the four action/time heads).
        inference=True (serving, dtype the compute dtype): the adaRMS Dense layers too. They compute in the stream's
        dtype, so their fp32 weights were rounded to it at every use: the same numbers, without casting their ~116M
        parameters (pi05) on every call."""
        if inference and dtype != self.compute_dtype:  # checked first: a refused call leaves the model as it was
            raise ValueError(f'set_param_dtype({dtype}, inference=True): the adaRMS Dense layers compute in '
                             f'{self.compute_dtype}; casting them to another dtype would change the numbers')
        keep_parts = ('.input_layernorm.', '.post_attention_layernorm.')
        keep_prefixes = ('vlm_norm.', 'vision.embeddings.', 'action_in.', 'action_out.')
        for name, p in self.named_parameters():
            if not (name.startswith(keep_prefixes) or any(k in name for k in keep_parts)):
                p.data = p.data.to(dtype)
        if inference:
            for m in self.modules():
                if isinstance(m, AdaRMSNorm):
                    m.dense.to(dtype)
        return self

    # --- attention: which kernel runs where, in one place ---
    #
    # 'eager' is the reference (openpi's math written out), 'sdpa' and 'flex' compute the same function
    # (test_equivalence.py). attn='flex' runs FlexAttention with a BlockMask where every token is a query (layers
    # 0..depth-2 of the training forward, and the last one when skip_unused=False). Where only the H action tokens
    # are queries it runs sdpa with a dense (B, 1, H, T) mask: in the last training layer (skip_unused), because
    # compiled flex_attention found no kernel configuration for 50 queries at head dim 256 on the H200 while sdpa
    # handles that shape directly and its mask is small; and at inference (prefix pass and denoising steps), unless
    # sample_actions is given denoise_attn='flex' for the denoising steps (attention() then repeats the K/V heads:
    # flex decoding would pack a K/V head's 8 query heads x 50 actions into one block) or 'grouped' (the query heads
    # of a K/V head stacked into one matrix for two small GEMMs).

    def attn_impl(self, actions_only=False, inference=False):
        if self.attn == 'flex' and (actions_only or inference):
            return 'sdpa'
        return self.attn

    def attn_mask(self, valid, prefix_len, impl, q_start=0, horizon=None):
        if impl == 'flex':
            return flex_mask.block_mask(valid, prefix_len, q_start, horizon=horizon)
        dtype = torch.float32 if impl in ('eager', 'grouped', 'triton') else self.compute_dtype  # sdpa: the query's
        return flex_mask.additive_mask(valid, prefix_len, dtype, q_start, horizon)

    # --- the training forward ---

    def check_batch(self, batch):
        cfg = self.cfg
        for key in ('images', 'image_mask', 'tokens', 'token_mask'):
            if key not in batch:
                raise KeyError(f"batch is missing {key!r} (has {sorted(batch)})")
        img = batch['images']
        if img.ndim != 5 or tuple(img.shape[2:]) != (3, cfg.image_size, cfg.image_size):
            raise ValueError(f"wrong image size: expected images (B, n_cams, 3, {cfg.image_size}, {cfg.image_size}), "
                             f"got {tuple(img.shape)}")
        if tuple(batch['image_mask'].shape) != tuple(img.shape[:2]):
            raise ValueError(f"image_mask {tuple(batch['image_mask'].shape)} does not match images {tuple(img.shape[:2])}")
        if batch['tokens'].shape[1] > cfg.max_token_len or batch['tokens'].shape != batch['token_mask'].shape:
            raise ValueError(f"tokens {tuple(batch['tokens'].shape)} / token_mask {tuple(batch['token_mask'].shape)}: "
                             f"expected equal shapes (B, <= {cfg.max_token_len})")

    def embed_prefix(self, batch):
        """Images of all camera slots through SigLIP in one call, then the prompt. -> (B, N*P + L, D), valid (B, N*P + L)."""
        img = batch['images']
        B, N = img.shape[:2]
        img = to_model_images(img.flatten(0, 1))
        if self.batched_vision:
            x_img = self.vision(img, self.compute_dtype).unflatten(0, (B, N))
        else:  # openpi's loop over cameras
            x_img = torch.stack([self.vision(img[i::N], self.compute_dtype) for i in range(N)], 1)
        x_img = self.projector(x_img).view(B, N * self.cfg.patches, -1)
        x_txt = (self.embed_tokens(batch['tokens']).float() * math.sqrt(self.cfg.width)).to(self.compute_dtype)
        valid = torch.cat([batch['image_mask'].bool().repeat_interleave(self.cfg.patches, 1), batch['token_mask'].bool()], 1)
        return torch.cat([x_img, x_txt], 1), valid

    def velocity(self, batch, x_t, t):
        """The joint training forward: v_t (B, H, A) fp32 for noisy actions x_t at time t (B,). Flow draws: x_t
        (B, K, H, A) at t (B, K) -> (B, K, H, A), K draws per sample sharing one prefix pass; each draw's H action
        tokens see the prefix and themselves only, at a single draw's positions, so each v equals that draw's alone."""
        self.check_batch(batch)
        xp, valid_p = self.embed_prefix(batch)
        K = x_t.shape[1] if x_t.ndim == 4 else None
        B, Lp, H = xp.shape[0], xp.shape[1], x_t.shape[-2]
        valid = torch.cat([valid_p, valid_p.new_ones(B, (K or 1) * H)], 1)
        pos = torch.cumsum(valid, 1) - 1  # padding never advances positions
        if K:  # every draw's actions take the positions of the first's
            pos = torch.cat([pos[:, :Lp], pos[:, Lp:Lp + H].repeat(1, K)], 1)
        cos, sin = rope_tables(pos, self.cfg.head_dim)
        impl, last_impl = self.attn_impl(), self.attn_impl(actions_only=self.skip_unused)
        mask = self.attn_mask(valid, Lp, impl, horizon=K and H)  # built once per batch, shared by all layers
        last_mask = self.attn_mask(valid, Lp, last_impl, q_start=Lp, horizon=K and H) if self.skip_unused else mask
        if K:  # action tokens (B, K * H, W); the condition (B, K, W), one per draw (AdaRMSNorm spreads it)
            xs, cond = self.action_in(x_t.flatten(1, 2), t.flatten(), self.compute_dtype)
            cond = cond.view(B, K, -1)
        else:
            xs, cond = self.action_in(x_t, t, self.compute_dtype)
        for layer in self.layers[:-1]:
            xp, xs = layer(xp, xs, cond, cos, sin, mask, impl)
        xp, xs = self.layers[-1](xp, xs, cond, cos, sin, last_mask, last_impl)
        if not self.skip_unused:
            self.vlm_norm(xp)  # the reference computes the prefix final norm too; its output feeds nothing
        v = self.action_out(xs, cond)
        return v.unflatten(1, (K, H)) if K else v

    def forward(self, batch, noise=None, time=None, loss_dims=0, generator=None, per_dim=False):
        """Flow-matching loss: x_t = t*eps + (1-t)*a, u_t = eps - a; mean of (v_t - u_t)^2 over B, H and all A dims
        (openpi), or over the first loss_dims dims (LeRobot). noise/time default to fresh draws (sample_time).
        noise (B, K, H, A) with time (B, K): K flow draws per sample on one prefix pass (velocity), the mean over
        them too. per_dim: the mean over all but the A dims instead (evaluation reads several losses off one pass)."""
        a = batch['actions'].float()
        if a.ndim != 3 or a.shape[1:] != (self.cfg.action_horizon, self.cfg.action_dim):
            raise ValueError(f"actions: expected (B, {self.cfg.action_horizon}, {self.cfg.action_dim}), got {tuple(a.shape)}")
        if noise is None:
            noise = torch.randn(a.shape, device=a.device, generator=generator)
        if noise.ndim == 4:  # flow draws
            if noise.shape[2:] != a.shape[1:] or noise.shape[0] != a.shape[0]:
                raise ValueError(f"noise {tuple(noise.shape)}: expected (B, K, H, A) with actions {tuple(a.shape)}")
            a = a[:, None]
        if time is None:
            time = sample_time(noise.shape[:-2].numel(), generator, a.device).view(noise.shape[:-2])
        t = time[..., None, None]
        v = self.velocity(batch, t * noise + (1 - t) * a, time)
        err = (v - (noise - a)) ** 2
        if per_dim:
            return err.mean(tuple(range(err.ndim - 1)))
        return (err[..., :loss_dims] if loss_dims else err).mean()

    # --- inference ---

    @torch.no_grad()
    def sample_actions(self, batch, noise=None, num_steps=10, generator=None, guide=None, guide_weights=None,
                       max_guidance=5.0, denoise_attn=None, prefix_attn=None):
        """10 Euler steps from t = 1 (noise) to t = 0 with dt = -1/num_steps; prefix K/V computed once, and what
        each step needs from its time alone too (step_conditions).
        guide (B, H, A) with guide_weights (B, H, A): real-time chunking (Black, Galliker, Levine 2025, arXiv
        2506.07339): every step is steered so that the chunk it predicts matches `guide` where the weights are
        positive (rtc_weights), through a vector-Jacobian product of the velocity; max_guidance is the paper's clip
        beta (a number, or a 0-dim float64 tensor: an input of a CUDA graph). guide None: plain sampling (all-zero
        weights or max_guidance 0 give the same numbers).
        denoise_attn: the plain denoising steps' attention, 50 action queries over the cached prefix; None follows
        attn_impl; 'flex' runs FlexAttention, whose compiled form for short queries (flex decoding) splits the keys
        over the GPU where cuDNN's kernel gives each head one block; 'grouped' stacks the query heads that share a
        K/V head into one matrix (fp32 logits and softmax as the reference, two small GEMMs per K/V head); 'triton'
        does the same in one Triton kernel on a GPU (decode_attn.py; elsewhere it runs 'grouped'). Guided calls run
        'grouped' for 'grouped' and 'triton' (plain differentiable ops) and otherwise keep attn_impl's (flex has no
        backward for these shapes).
        prefix_attn: the prefix pass's attention (every prefix token a query), None: attn_impl's; 'grouped' as above."""
        check_choice('denoise_attn', denoise_attn, DENOISE_ATTN)  # prefix_attn: prefix_cache checks it
        cache = self.prefix_cache(batch, denoise_attn if guide is None or denoise_attn in GROUPED_MATH else None,
                                  prefix_attn)
        B = cache['valid'].shape[0]
        x = noise if noise is not None else torch.randn(B, self.cfg.action_horizon, self.cfg.action_dim,
                                                        device=cache['valid'].device, generator=generator)
        dt, ts = -1.0 / num_steps, [torch.ones(B, device=x.device)]
        for _ in range(num_steps - 1):
            ts.append(ts[-1] + dt)
        for t, conds in zip(ts, self.step_conditions(ts)):
            if guide is None:
                v = self.denoise(cache, x, t, conds)
            else:
                v = self.guided_velocity(cache, x, t, guide, guide_weights, max_guidance, conds)
            x = x + dt * v
        return x

    def step_conditions(self, ts):
        """What a denoising step takes from its flow time alone, for all steps of a call at once: the time MLP and
        each adaRMS Dense (2 per layer and the final norm's: over a quarter of the expert's weights) run once over all
        steps' rows instead of once per step. ts: the steps' times, each (B,). -> per step (cond (B, W),
        [(input norm, post-attention norm) Dense outputs per layer], the final norm's)."""
        S, B = len(ts), ts[0].shape[0]
        cond = self.action_in.time_cond(torch.cat(ts))
        c = cond.to(self.compute_dtype)  # AdaRMSNorm casts cond to the stream's dtype
        per_step = lambda y: y.view(S, B, -1).unbind(0)
        norms = [(per_step(l.expert.input_layernorm.dense(c)), per_step(l.expert.post_attention_layernorm.dense(c)))
                 for l in self.layers]
        final = per_step(self.action_out.norm.dense(c))
        return [(cond.view(S, B, -1)[i], [(a[i], b[i]) for a, b in norms], final[i]) for i in range(S)]

    def guided_velocity(self, cache, x_t, t, guide, weights, max_guidance, conds=None):
        """The velocity with RTC's guidance. In the paper's time tau = 1 - t (0 noise, 1 data) the predicted clean
        chunk is x0 = x_t - t v (x_t = t noise + (1 - t) x0, v = noise - x0); the guidance g = (dx0/dx_t)^T (W (guide
        - x0)) is added to the data-ward velocity -v with weight min(beta, (1 - tau) / (tau r^2)), r^2 = (1 - tau)^2 /
        (tau^2 + (1 - tau)^2)."""
        with torch.enable_grad():
            x = x_t.detach().requires_grad_(True)
            v = self.cached_velocity(cache, x, t, conds)
            x0 = x - t[:, None, None].to(v.dtype) * v
            g, = torch.autograd.grad(x0, x, grad_outputs=(weights * (guide - x0.detach())).to(x0.dtype))
        tau = (1 - t).double()
        r2 = (1 - tau) ** 2 / (tau ** 2 + (1 - tau) ** 2)
        c = torch.clamp((1 - tau) / (tau * r2), max=max_guidance).to(v.dtype)  # tau = 0: inf -> beta
        return v.detach() - c[:, None, None] * g

    @torch.no_grad()
    def prefix_cache(self, batch, denoise_attn=None, prefix_attn=None):
        """Prefix-only pass: per layer the post-RoPE K and V of the prefix (the last layer's prefix output, which no
        action token reads, is not computed). denoise_attn: the denoising steps' attention, prefix_attn the prefix
        pass's, else attn_impl's."""
        self.check_batch(batch)
        check_choice('prefix_attn', prefix_attn, PREFIX_ATTN)
        xp, valid = self.embed_prefix(batch)
        cos, sin = rope_tables(torch.cumsum(valid, 1) - 1, self.cfg.head_dim)
        B, Lp, H = valid.shape[0], valid.shape[1], self.cfg.action_horizon
        step_impl = denoise_attn or self.attn_impl(actions_only=True, inference=True)
        # 'grouped' (and 'triton', whose guided steps run 'grouped'): masked zero keys after the prefix, a key count
        # that is a multiple of 8, so cuBLAS runs the attention's two products with its 16-byte-aligned kernels
        # (Tp + 50 keys gave 2-element-aligned ones)
        pad = -(Lp + H) % 8 if step_impl in GROUPED_MATH else 0
        impl = prefix_attn or self.attn_impl(inference=True)
        mask = self.attn_mask(valid, xp.shape[1], impl)
        kv = []
        for i, layer in enumerate(self.layers):
            xp, k, v = layer.prefix_step(xp, cos, sin, mask, impl, last=i == len(self.layers) - 1, pad=pad)
            kv.append((k, v))
        # what every denoising step shares: suffix positions follow the valid prefix; the action queries' mask
        cos, sin = rope_tables(valid.sum(1, keepdim=True) + torch.arange(H, device=valid.device), self.cfg.head_dim)
        keys = torch.cat([valid, valid.new_zeros(B, pad), valid.new_ones(B, H)], 1)
        mask = self.attn_mask(keys, Lp + pad, step_impl, q_start=Lp + pad)
        return {'kv': kv, 'valid': valid, 'rope': (cos, sin), 'mask': mask, 'impl': step_impl}

    @torch.no_grad()
    def denoise(self, cache, x_t, t, conds=None):
        """Velocity from a suffix-only pass attending to the cached prefix K/V (exactly the joint forward's)."""
        return self.cached_velocity(cache, x_t, t, conds)

    def cached_velocity(self, cache, x_t, t, conds=None):
        """denoise, differentiable in x_t (for RTC's guidance). conds: this step's step_conditions, else computed."""
        (cos, sin), mask, impl = cache['rope'], cache['mask'], cache['impl']
        cond, mods, out_mod = conds if conds is not None else (None, [(None, None)] * len(self.layers), None)
        xs, cond = self.action_in(x_t, t, self.compute_dtype, cond)
        for layer, (kp, vp), m in zip(self.layers, cache['kv'], mods):
            xs = layer.denoise_step(xs, kp, vp, cond, cos, sin, mask, impl, m)
        return self.action_out(xs, cond, out_mod)

    # --- accounting ---

    def estimate_flops(self, batch, draws=1):
        """Model FLOPs of one training step (forward + backward, no recompute) for the tokens actually computed:
        2*m*n*k per matmul forward, twice that backward (the patch conv needs no input gradient); attention as
        the dense QK^T and PV products. draws: flow draws per sample (their action tokens as one longer suffix)."""
        cfg = self.cfg
        B, N = batch['images'].shape[:2]
        L, H, P = batch['tokens'].shape[1], cfg.action_horizon * draws, cfg.patches
        Tp, T = N * P + L, N * P + L + H
        qd, kvd = cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
        mm = lambda rows, k, n: 2 * rows * k * n
        n_img, vw = B * N, cfg.vit_width
        vit = (mm(n_img * P, vw, 4 * vw) + mm(n_img * P, vw, 2 * cfg.vit_mlp) + 2 * mm(n_img * cfg.vit_heads, P, P * vw // cfg.vit_heads)) * cfg.vit_depth
        vit += mm(n_img * P, vw, cfg.width)  # projector
        if cfg.vision_stem == 'conv':  # stride-2 3x3 convs: 1/4 the positions and twice the channels at each
            ch = ConvStem.channels(cfg)
            n = len(ch) - 1
            patch = sum(mm(n_img * P * 4 ** (n - 1 - i), 9 * ch[i], ch[i + 1]) for i in range(n)) + mm(n_img * P, ch[-1], vw)
        else:
            patch = mm(n_img * P, 3 * cfg.patch ** 2, vw)
        def stream(rows, d, hidden, q=True, out=True):
            return (mm(rows, d, qd) if q else 0) + mm(rows, d, 2 * kvd) + (mm(rows, qd, d) + mm(rows, d, 3 * hidden) if out else 0)
        attn = lambda tq: 2 * mm(B * cfg.heads, tq, T * cfg.head_dim)
        ew = cfg.expert_width
        ada = lambda sites: sites * mm(B * draws, ew, 3 * ew)  # one condition per draw
        full = stream(B * Tp, cfg.width, cfg.mlp) + stream(B * H, ew, cfg.expert_mlp) + attn(T) + ada(2)
        last = (stream(B * Tp, cfg.width, cfg.mlp, q=False, out=False) + stream(B * H, ew, cfg.expert_mlp) + attn(H) + ada(2)
                if self.skip_unused else full)
        heads = mm(B * draws, ew, 2 * ew) + mm(B * H, cfg.action_dim, ew) + mm(B * H, ew, cfg.action_dim) + ada(1)
        fwd = vit + full * (cfg.depth - 1) + last + heads
        return 3 * fwd + 2 * patch

def rtc_weights(horizon, overlap, delay):
    """Real-time chunking's soft mask over a new chunk of `horizon` actions whose first `overlap` actions overlap the
    previous chunk and whose first `delay` of those run from the previous chunk while this one is computed: 1 on
    the first `delay`, then c (e^c - 1) / (e - 1) with c going from 1 down to 0 over the rest of the overlap, 0
    after it (Black, Galliker, Levine 2025, eq. 5). -> float32 (horizon,)."""
    if not 0 <= delay <= overlap <= horizon:
        raise ValueError(f'need 0 <= delay ({delay}) <= overlap ({overlap}) <= horizon ({horizon})')
    i = torch.arange(horizon, dtype=torch.float64)
    c = ((overlap - i) / (overlap - delay + 1)).clamp(0, 1)
    w = c * (torch.exp(c) - 1) / (math.e - 1)
    return torch.where(i < delay, 1.0, torch.where(i < overlap, w, 0.0)).float()


@torch.no_grad()
def perturb_weights(model, scale, generator=None):
    """Add scale * N(0, 1) to every parameter, for tests and benchmarks that compare computation paths: fresh init
    zeroes the adaRMS gates and the image projector, so the expert layers are the identity and a wrong attention or
    projection path could not change an output. generator None: torch's global generator."""
    for p in model.parameters():
        p.add_(torch.randn(p.shape, generator=generator, device=p.device, dtype=p.dtype) * scale)


# -----------------------------------------------------------------------------
# training wrappers, applied from outside in torchtitan's order: fp8 (fp8.py) -> recompute -> compile -> DDP


def uncompiled_attn(attn):
    """The attention for a copy of a model that runs eagerly or on the CPU (an EMA copy, a CPU dry run, a shape
    probe): flex_attention needs a compiled CUDA kernel (no CPU backward), and sdpa computes the same function."""
    return 'sdpa' if attn == 'flex' else attn


RECOMPUTE_PRESETS = {'none': [], 'vit': ['vision.encoder.layers.*'], 'full': ['vision.encoder.layers.*', 'layers.*']}


def recompute_unit_kinds(cfg):
    """name -> kind of every unit whose activations can be recomputed in backward instead of stored: 'vit' (a SigLIP
    layer), 'layers' (a whole joint layer), and a joint layer's parts 'attn', 'vlm_mlp', 'expert_mlp'. The memory
    account (memory.py) charges activations by these kinds."""
    kinds = {f'vision.encoder.layers.{i}': 'vit' for i in range(cfg.vit_depth)}
    for i in range(cfg.depth):
        kinds.update({f'layers.{i}': 'layers', f'layers.{i}.attn': 'attn', f'layers.{i}.vlm.mlp': 'vlm_mlp',
                      f'layers.{i}.expert.mlp': 'expert_mlp'})
    return kinds


def resolve_recompute(cfg, spec):
    """spec: 'none' | 'vit' | 'full' | comma-separated patterns over recompute_unit_kinds' names, where '*' stands for
    one name part (e.g. 'vit,layers.*.vlm.mlp') -> the unit names chosen, or a ValueError naming the pattern."""
    units, chosen = recompute_unit_kinds(cfg), []
    for pattern in (p for part in spec.split(',') for p in RECOMPUTE_PRESETS.get(part, [part])):
        regex = re.compile(re.escape(pattern).replace(r'\*', r'[^.]+'))
        hits = [n for n in units if regex.fullmatch(n)]
        if not hits:
            raise ValueError(f"recompute pattern {pattern!r} matches no unit; units look like "
                             f"'vision.encoder.layers.0', 'layers.0', 'layers.0.attn', 'layers.0.vlm.mlp', 'layers.0.expert.mlp'")
        chosen += [n for n in hits if n not in chosen]
    return chosen


def recompute_units(model):
    """name -> (object, method) of every unit in recompute_unit_kinds."""
    units = {f'vision.encoder.layers.{i}': (layer, 'forward') for i, layer in enumerate(model.vision.encoder.layers)}
    for i, layer in enumerate(model.layers):
        units.update({f'layers.{i}': (layer, 'forward'), f'layers.{i}.attn': (layer, 'attend'),
                      f'layers.{i}.vlm.mlp': (layer.vlm.mlp, 'forward'),
                      f'layers.{i}.expert.mlp': (layer.expert.mlp, 'forward')})
    return units


def apply_recompute(model, spec):
    """Wraps each unit resolve_recompute(model.cfg, spec) chooses in a non-reentrant checkpoint; the module tree and
    state_dict are unchanged. Returns the chosen unit names."""
    if getattr(model, 'recomputed', None) is not None:
        raise RuntimeError('apply_recompute was already applied to this model')
    units, chosen = recompute_units(model), resolve_recompute(model.cfg, spec)
    for name in chosen:
        obj, method = units[name]
        setattr(obj, method, checkpointed(getattr(obj, method)))
    model.recomputed = chosen
    return chosen


def checkpointed(fn):
    """fn with its activations recomputed in backward (non-reentrant checkpoint). A plain function rather than a
    partial of checkpoint, so that torch.compile traces into it from a compiled module's forward."""
    def run(*args):
        return checkpoint(fn, *args, use_reentrant=False)
    run.checkpointed = fn
    return run


def keep_compiled_variants(limit=64):
    """Static shapes make each batch size, prompt bucket, eval batch and layer class (the last layer differs) one
    more compiled variant of the same code: keep them all instead of failing (fullgraph) after dynamo's default 8."""
    import torch._dynamo
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, limit)


def apply_compile(model, vision=True, backend='inductor', mode=None):
    """Per-layer compile, in place (no `_orig_mod.` keys): each joint layer is its own compiled unit (its backward its
    own autograd function, so DDP all-reduces a layer's gradients while earlier layers are still in backward);
    layers 0..depth-2 share one graph, the last layer has its own; the time MLP + action input projection and the
    final norm + action output projection are small graphs of their own; with vision=True each SigLIP layer is a
    compiled unit (one graph for all 27). Prefix assembly (embedding, masks) stays eager."""
    keep_compiled_variants()
    kw = dict(backend=backend, mode=mode, fullgraph=True, dynamic=False)
    units = list(model.layers) + [model.action_in, model.action_out] + (list(model.vision.encoder.layers) if vision else [])
    for unit in units:
        unit.compile(**kw)
    return model


def fused_groups(model):
    """(module, Linear names) whose Linears fuse_projections runs as one GEMM: each Gemma stream's q/k/v and
    gate/up, each SigLIP layer's q/k/v."""
    for layer in model.layers:
        for stream in (layer.vlm, layer.expert):
            yield stream.self_attn, ('q_proj', 'k_proj', 'v_proj')
            yield stream.mlp, ('gate_proj', 'up_proj')
    for layer in model.vision.encoder.layers:
        yield layer.self_attn, ('q_proj', 'k_proj', 'v_proj')


@torch.no_grad()
def fuse_projections(model):
    """Serving: each Gemma stream's q/k/v Linears and gate/up Linears, and each SigLIP layer's q/k/v (with their
    biases), run as one GEMM each (fewer, larger launches) while their weights need no gradient (a trained parameter
    takes the separate path). The parameters become views into the concatenated tensor, so no memory is added and the
    state dict and loading are unchanged; call it last: a later dtype or device change unties them (fused_intact says
    whether they still are)."""
    def tie(linears, name):
        assert all(type(l) is Linear for l in linears), 'fuse_projections takes plain Linears (no LoRA, no fp8)'
        fused, i = torch.cat([getattr(l, name) for l in linears]), 0
        for l in linears:
            n = l.weight.shape[0]
            getattr(l, name).data = fused[i:i + n]
            i += n
        return fused
    for m, names in fused_groups(model):
        linears = [m.get_submodule(n) for n in names]
        m.fused = tie(linears, 'weight')
        if linears[0].bias is not None:
            m.fused_bias = tie(linears, 'bias')
    return model


def cat_projections(model, on=True):
    """Training: the same groups as fuse_projections (fused_groups) run as one GEMM each over their weights
    concatenated at each call (cat_linear), so the parameters stay separate tensors; on=False: one GEMM per Linear.
    Groups whose Linears are not plain (fp8, LoRA) keep one GEMM per Linear."""
    for m, _ in fused_groups(model):
        m.cat = on
    return model


def use_small_gemm(model, on=True):
    """Serving: the action expert's projections (its rows are the action tokens, 50 per sample; q/k/v and gate/up
    fused or not, o_proj, down_proj) run small_gemm.py's kernel wherever small_gemm.usable allows (bf16 on a GPU, at
    most small_gemm.MAX_ROWS rows, a weight shape it has a configuration for, no gradient), cuBLAS elsewhere; on=False
    undoes it. It is the model's state: compiled graphs see a change (it is guarded) and recompile."""
    for layer in model.layers:
        expert = layer.expert
        for m in [expert.self_attn, expert.mlp] + [l for l in expert.modules() if isinstance(l, Linear)]:
            m.small = on
    return model


def fused_intact(model):
    """True when every fused tensor still holds its Linears' weights (fuse_projections; False once they are untied)."""
    same = lambda w, f: w.untyped_storage().data_ptr() == f.untyped_storage().data_ptr()
    return all(same(l.weight, m.fused) and (l.bias is None or same(l.bias, m.fused_bias))
               for m, names in fused_groups(model) if m.fused is not None for l in map(m.get_submodule, names))


def compile_inference(model, backend='inductor', mode=None, whole_step=False):
    """Per-layer compile of sample_actions: the prefix step and the denoising step of a joint layer are each one
    graph shared by all layers, each SigLIP layer and the two action heads one more (inference graphs of their own,
    apart from the training forward's). With static shapes the whole sample loop can then be captured in a CUDA
    graph (serve.py). whole_step=True: a plain denoising step (action input, every layer, action output) is one
    graph instead, so inductor may fuse across layer boundaries (a layer's last residual into the next one's norm);
    it takes longer to compile (compile_denoise_step)."""
    keep_compiled_variants()
    kw = dict(backend=backend, mode=mode, fullgraph=True, dynamic=False)
    for layer in model.layers:
        layer.prefix_step = torch.compile(layer.prefix_step, **kw)
        layer.denoise_step = torch.compile(layer.denoise_step, **kw)
    for unit in list(model.vision.encoder.layers) + [model.action_in, model.action_out]:
        unit.compile(**kw)
    if whole_step:
        compile_denoise_step(model, backend, mode)
    return model


def compile_denoise_step(model, backend='inductor', mode=None):
    """Pi05.denoise (one plain denoising step, all layers) as one compiled graph; the per-layer graphs it calls, if
    compiled, are traced into it. Guided steps (real-time chunking) keep the per-layer graphs. (An instance attribute:
    a deep copy of the model would share it, and run the original's weights.)"""
    keep_compiled_variants()
    model.denoise = torch.compile(model.denoise, backend=backend, mode=mode, fullgraph=True, dynamic=False)
    return model

# -----------------------------------------------------------------------------
# LoRA (openpi's gemma_2b_lora / gemma_300m_lora variants)

LORA_RANKS = {'vlm': (16, 16.0), 'expert': (32, 32.0)}  # (rank, alpha) per stream, as openpi's gemma.get_config
LORA_TARGETS = ('self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj',
                'mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj')  # openpi: the attention and FFN einsums


class LoRALinear(Linear):
    """y = x W^T + (x A^T) B^T * alpha / rank, the base weight frozen; B starts at zero, so training starts exactly
    at the base model (openpi lora.py: A normal(0.01), B zeros)."""
    def forward(self, x):
        return super().forward(x) + F.linear(F.linear(x, self.lora_A.to(x.dtype)), self.lora_B.to(x.dtype)) * self.lora_scale

    def merged_weight(self):
        """W + B A alpha / rank in fp32 (a bf16 base would round most of a small update away)."""
        return self.weight.float() + (self.lora_B.float() @ self.lora_A.float()) * self.lora_scale


def apply_lora(model, ranks=LORA_RANKS, base_dtype=torch.bfloat16):
    """openpi's LoRA fine-tuning: adapters on both Gemma streams' attention and MLP projections, every other
    weight of the two streams frozen (its freeze filter: all `llm` parameters but the LoRA ones) and cast to
    base_dtype; SigLIP, the projector and the action/time heads stay trainable as openpi leaves them. In place,
    before fp8/recompute/compile; returns the adapter names."""
    for name, p in model.named_parameters():  # openpi's `llm`: both Gemma streams, their embedding and final norms
        if name.startswith(('layers.', 'embed_tokens.', 'vlm_norm.', 'action_out.norm.')):
            p.requires_grad_(False)
            p.data = p.data.to(base_dtype)
    names = []
    unused = {id(p) for p in model.unused_parameters()}
    for i, layer in enumerate(model.layers):
        for stream in ('vlm', 'expert'):
            rank, alpha = ranks[stream]
            for target in LORA_TARGETS:
                lin = getattr(layer, stream).get_submodule(target)
                if id(lin.weight) in unused:  # the last layer's prefix q/o/mlp never run
                    continue
                lin.__class__ = LoRALinear
                dev = lin.weight.device
                lin.lora_A = nn.Parameter(torch.randn(rank, lin.in_features, device=dev) * 0.01)
                lin.lora_B = nn.Parameter(torch.zeros(lin.out_features, rank, device=dev))
                lin.lora_scale = alpha / rank
                names.append(f'layers.{i}.{stream}.{target}')
    return names


def merged_state_dict(model):
    """The model's state dict with every LoRA adapter folded into its base weight (no lora_* keys): what
    save_pretrained writes for a LoRA run, an ordinary openpi-format checkpoint."""
    sd = {k: v for k, v in model.state_dict().items() if '.lora_' not in k}
    for name, m in model.named_modules():
        if isinstance(m, LoRALinear):
            sd[name + '.weight'] = m.merged_weight().detach()
    return sd


def lora_state_dict(model):
    """What a LoRA run trains, alone: the adapters and every other trainable parameter (adapters.safetensors)."""
    return {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}

# -----------------------------------------------------------------------------
# checkpoints: openpi / LeRobot key names, safetensors files


PALI = 'paligemma_with_expert.paligemma.'
EXPERT = 'paligemma_with_expert.gemma_expert.'
KEY_MAP = [  # (our name prefix, openpi's); openpi keys are PI0Pytorch.state_dict() names, see docs/numerics.md
    (r'vision\.', PALI + 'model.vision_tower.vision_model.'),
    (r'projector\.', PALI + 'model.multi_modal_projector.linear.'),
    (r'embed_tokens\.', PALI + 'model.language_model.embed_tokens.'),
    (r'layers\.(\d+)\.vlm\.', PALI + r'model.language_model.layers.\1.'),
    (r'layers\.(\d+)\.expert\.', EXPERT + r'model.layers.\1.'),
    (r'vlm_norm\.', PALI + 'model.language_model.norm.'),
    (r'action_out\.norm\.', EXPERT + 'model.norm.'),
    (r'action_(in|out)\.', ''),  # action_in_proj, time_mlp_in, time_mlp_out, action_out_proj are top-level in openpi
]
TIED_EMBED = PALI + 'lm_head.weight'          # openpi's file stores the tied token embedding under this name
EXPERT_LM_HEAD = EXPERT + 'lm_head.weight'     # exists in openpi files, never used: ignored on load


def to_openpi_key(k):
    for ours, theirs in KEY_MAP:
        if re.match(ours, k):
            return re.sub('^' + ours, theirs, k)
    return k


def openpi_state_dict(model, dtype=None, state_dict=None):
    """Our weights (state_dict, default the model's with LoRA adapters merged in) under openpi's key names, with the
    tied embedding stored as openpi stores it, and a zero expert lm_head so openpi's strict load_model accepts it."""
    sd = {}
    for k, v in (merged_state_dict(model) if state_dict is None else state_dict).items():
        k = to_openpi_key(k)
        sd[TIED_EMBED if k.endswith('embed_tokens.weight') else k] = v if dtype is None else v.to(dtype)
    sd[EXPERT_LM_HEAD] = torch.zeros(model.cfg.vocab, model.cfg.expert_width, dtype=torch.bfloat16)
    return sd


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_tensors(tensors, path):
    """A safetensors file written atomically: a temporary file, fsync, rename."""
    from safetensors.torch import save_file
    tmp = f'{path}.tmp{os.getpid()}'
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, tmp, metadata={'format': 'pt'})
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # save_file creates 0600; the checkpoint's other files follow the umask
    fsync_path(tmp)
    os.replace(tmp, path)
    return path


def save_pretrained(model, path, dtype=None, state_dict=None):
    """Write `model.safetensors` in openpi's key format (a directory or a file path); state_dict: the weights to
    write instead of the model's own (e.g. gathered from shards). Returns the file's path."""
    if os.path.isdir(path) or not path.endswith('.safetensors'):
        os.makedirs(path, exist_ok=True)
        path = os.path.join(path, 'model.safetensors')
    return save_tensors(openpi_state_dict(model, dtype, state_dict), path)


def load_lora(model, path):
    """Load adapters.safetensors (lora_state_dict's keys) into a model with apply_lora applied."""
    from safetensors.torch import load_file
    sd, ours = load_file(path), dict(model.named_parameters())
    missing, unexpected = sorted(set(lora_state_dict(model)) - set(sd)), sorted(set(sd) - set(ours))
    if missing or unexpected:
        raise CheckpointError(f'cannot load {path}: {len(missing)} missing ({missing[:5]}), {len(unexpected)} unexpected '
                              f'({unexpected[:5]}); it must come from a run with the same lora setting')
    with torch.no_grad():
        for k, v in sd.items():
            ours[k].copy_(v)
    return model


class CheckpointError(ValueError):
    """A checkpoint file that cannot be loaded; the message names the file and what is wrong."""


def _checkpoint_file(path):
    path = os.path.join(path, 'model.safetensors') if os.path.isdir(path) else path
    if not os.path.exists(path):
        raise CheckpointError(f"no checkpoint at {path}: init_from takes a model.safetensors file or its directory")
    return path


def _file_names(f, ours, path):
    """{our key: name in the file} for an open safetensors file, after checking names and shapes against our state
    dict (which may live on the meta device). Accepts LeRobot's `model.` prefix and the tied embedding under
    lm_head, ignores the unused expert lm_head; anything else missing, unexpected or misshaped is an error."""
    wanted = {to_openpi_key(k): k for k in ours}  # openpi name -> ours
    wanted[TIED_EMBED] = wanted.pop(PALI + 'model.language_model.embed_tokens.weight')
    names = {}  # openpi name -> name in the file
    for name in f.keys():
        k = name[len('model.'):] if name.startswith('model.') else name
        if k == PALI + 'model.language_model.embed_tokens.weight':  # LeRobot's untied name
            k = TIED_EMBED
        if k != EXPERT_LM_HEAD:
            names[k] = name
    shape = lambda k: tuple(f.get_slice(names[k]).get_shape())
    missing = sorted(set(wanted) - set(names))
    unexpected = sorted(set(names) - set(wanted))
    misshaped = sorted(f'{k}: file {shape(k)} vs model {tuple(ours[wanted[k]].shape)}'
                       for k in set(names) & set(wanted) if shape(k) != tuple(ours[wanted[k]].shape))
    if missing or unexpected or misshaped:  # one line: the counts and the first few names of each
        raise CheckpointError(f'cannot load {path}: ' + '; '.join(
            f'{len(keys)} {what}: ' + ', '.join(keys[:3]) + (', ...' if len(keys) > 3 else '')
            for what, keys in (('missing', missing), ('unexpected', unexpected), ('misshaped', misshaped)) if keys))
    return {wanted[k]: name for k, name in names.items()}


def load_pretrained(model, path, check_only=False):
    """Load an openpi PyTorch or LeRobot `model.safetensors` (file or directory) into model, casting to each
    parameter's dtype, one tensor at a time from the memory-mapped file. check_only: check names and shapes only
    (works on a model on the meta device, in milliseconds). Raises CheckpointError naming the file."""
    from safetensors import safe_open
    path = _checkpoint_file(path)
    ours = model.state_dict()
    try:
        with safe_open(path, framework='pt', device='cpu') as f:
            names = _file_names(f, ours, path)
            if not check_only:
                with torch.no_grad():
                    for k, name in names.items():
                        ours[k].copy_(f.get_tensor(name))
    except CheckpointError:
        raise
    except Exception as err:  # truncated or garbled file: safetensors says what, we say where
        raise CheckpointError(f"{path}: not a readable safetensors file ({type(err).__name__}: {err}); "
                              f"copy it again or use another checkpoint") from None
    return model


def check_pretrained(cfg, path):
    """load_pretrained's checks of a file against a model of config cfg, without building one."""
    with torch.device('meta'):
        return load_pretrained(Pi05(cfg), path, check_only=True)


def resolve_device(device):
    """'auto' -> 'cuda' when a CUDA GPU is visible, else 'cpu'; 'cpu', 'cuda' and 'cuda:<index>' as given, once
    checked (a ValueError that names the fix otherwise)."""
    device = str(device)
    if device == 'auto':
        return 'cuda' if torch.cuda.is_available() else 'cpu'
    if not (device in ('cpu', 'cuda') or device.startswith('cuda:') and device[5:].isdigit()):
        raise ValueError(f"device={device!r}: expected 'auto', 'cpu', 'cuda' or 'cuda:<index>'")
    if device != 'cpu' and not torch.cuda.is_available():
        raise ValueError(f"device={device!r}, but this torch ({torch.__version__}) sees no CUDA GPU: use "
                         f"--device=cpu (or 'auto'), or install a CUDA build of torch")
    return device


def build(name_or_cfg, device='cpu', attn='eager', compute_dtype=torch.bfloat16, init_from=None, skip_unused=True,
          batched_vision=True, **overrides):
    """Build Pi05 without materialising random weights twice: on the meta device, then on `device`, then either
    loaded from init_from or freshly initialised. overrides: Pi05Config fields (e.g. action_horizon=10)."""
    cfg = configs[name_or_cfg] if isinstance(name_or_cfg, str) else name_or_cfg
    cfg = replace(cfg, **overrides)
    with torch.device('meta'):
        model = Pi05(cfg, attn=attn, compute_dtype=compute_dtype, skip_unused=skip_unused, batched_vision=batched_vision)
    model.to_empty(device=device)
    if init_from:
        load_pretrained(model, init_from)
    else:
        model.init_weights()
    return model
