"""
The Pi0.5 attention mask: openpi's dense rule as a reference, and the same rule as a FlexAttention BlockMask.

Token layout of one sample (model.py's shape letters, T = Tp + H): [camera 0 patches | camera 1 patches | ... |
prompt slots | H action tokens], prefix length Tp = N * P + L. openpi's rule (pi0_pytorch.make_att_2d_masks, JAX
make_attn_mask): with c = cumsum(ar), token i sees token j iff c[j] <= c[i] and pad[i] and pad[j]. Pi0.5 marks the prefix ar = 0 and
the actions ar = [1, 0, ..., 0], so the rule reduces to: both tokens valid, and a prefix query never sees an action key.
That form needs only a per-sample validity vector (B, T) and the prefix length, which is what the BlockMask uses.

Flow draws (horizon given): the actions are K blocks of `horizon` tokens, K noisy versions of one chunk trained on
one prefix pass; an action query then also never sees another block's actions, so each block computes exactly what
it would alone. horizon None (or the whole suffix) is the rule above.
"""
import torch


def dense_reference(pad, ar):
    """openpi's make_att_2d_masks. pad, ar: (B, T) bool/int -> (B, T, T) bool, [b, query, key]."""
    c = torch.cumsum(ar.long(), dim=1)
    return (c[:, None, :] <= c[:, :, None]) & pad[:, None, :] & pad[:, :, None]


def pi05_ar(prefix_len, horizon, device=None):
    """Pi0.5 block marks: prefix 0, actions [1, 0, ..., 0] (pi0_pytorch.embed_suffix)."""
    ar = torch.zeros(prefix_len + horizon, dtype=torch.long, device=device)
    ar[prefix_len] = 1
    return ar


def sees(q, kv, prefix_len, horizon=None):
    """The position part of the rule for query and key indices (broadcasting tensors): a prefix query never sees
    actions; with flow draws an action query sees only its own block's actions."""
    visible = (kv < prefix_len) | (q >= prefix_len)
    if horizon:
        visible = visible & ((kv < prefix_len) | ((q - prefix_len) // horizon == (kv - prefix_len) // horizon))
    return visible


def dense_mask(valid, prefix_len, q_start=0, horizon=None):
    """The reduced rule from vectors. valid: (B, T) bool -> (B, T - q_start, T) bool (rows from q_start on)."""
    T = valid.shape[1]
    q = torch.arange(q_start, T, device=valid.device)
    kv = torch.arange(T, device=valid.device)
    return sees(q[:, None], kv[None, :], prefix_len, horizon)[None] & valid[:, q_start:, None] & valid[:, None, :]


def additive_mask(valid, prefix_len, dtype, q_start=0, horizon=None):
    """(B, 1, Tq, T) additive mask: 0 where visible, openpi's -2.3819763e38 where masked (pi0_pytorch)."""
    m = dense_mask(valid, prefix_len, q_start, horizon)
    return torch.where(m, 0.0, -2.3819763e38).to(dtype)[:, None]


def mask_mod_for(valid, prefix_len, q_start=0, horizon=None):
    """FlexAttention mask_mod of the same rule, reading only the (B, T) validity vector."""
    def mask_mod(b, h, q_idx, kv_idx):
        q = q_idx + q_start
        return valid[b, q] & valid[b, kv_idx] & sees(q, kv_idx, prefix_len, horizon)
    return mask_mod


def block_mask(valid, prefix_len, q_start=0, block_size=128, horizon=None):
    """BlockMask built once per batch and shared by all layers; fully masked 128x128 tiles are skipped."""
    from torch.nn.attention.flex_attention import create_block_mask
    B, T = valid.shape
    return create_block_mask(mask_mod_for(valid, prefix_len, q_start, horizon), B, None, T - q_start, T,
                             device=valid.device, BLOCK_SIZE=block_size)
