"""
The Pi0.5 attention mask: openpi's dense rule as a reference, and the same rule as a FlexAttention BlockMask.

Token layout of one sample (model.py's shape letters, T = Tp + H): [camera 0 patches | camera 1 patches | ... |
prompt slots | H action tokens], prefix length Tp = N * P + L. openpi's rule (pi0_pytorch.make_att_2d_masks, JAX
make_attn_mask): with c = cumsum(ar), token i sees token j iff c[j] <= c[i] and pad[i] and pad[j]. Pi0.5 marks the prefix ar = 0 and
the actions ar = [1, 0, ..., 0], so the rule reduces to: both tokens valid, and a prefix query never sees an action key.
That form needs only a per-sample validity vector (B, T) and the prefix length, which is what the BlockMask uses.
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


def dense_mask(valid, prefix_len, q_start=0):
    """The reduced rule from vectors. valid: (B, T) bool -> (B, T - q_start, T) bool (rows from q_start on)."""
    T = valid.shape[1]
    q = torch.arange(q_start, T, device=valid.device)
    kv = torch.arange(T, device=valid.device)
    causal_block = (kv[None, :] < prefix_len) | (q[:, None] >= prefix_len)  # prefix never sees actions
    return causal_block[None] & valid[:, q_start:, None] & valid[:, None, :]


def additive_mask(valid, prefix_len, dtype, q_start=0):
    """(B, 1, Tq, T) additive mask: 0 where visible, openpi's -2.3819763e38 where masked (pi0_pytorch)."""
    m = dense_mask(valid, prefix_len, q_start)
    return torch.where(m, 0.0, -2.3819763e38).to(dtype)[:, None]


def mask_mod_for(valid, prefix_len, q_start=0):
    """FlexAttention mask_mod of the same rule, reading only the (B, T) validity vector."""
    def mask_mod(b, h, q_idx, kv_idx):
        q = q_idx + q_start
        return valid[b, q] & valid[b, kv_idx] & ((kv_idx < prefix_len) | (q >= prefix_len))
    return mask_mod


def block_mask(valid, prefix_len, q_start=0, block_size=128):
    """BlockMask built once per batch and shared by all layers; fully masked 128x128 tiles are skipped."""
    from torch.nn.attention.flex_attention import create_block_mask
    B, T = valid.shape
    return create_block_mask(mask_mod_for(valid, prefix_len, q_start), B, None, T - q_start, T,
                             device=valid.device, BLOCK_SIZE=block_size)
