"""Split an inference kernel list (bench.py --infer_profile csv) at the end of the prefix pass's last large GEMM:
SigLIP + prefix before it, the denoising steps after; each part's milliseconds by kernel kind.
    python docs/runs/z_bf_split_infer.py <kernels csv> [gemm name, default the batch-8 prefix GEMM of 2026-12-07]"""
import collections
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
big = sys.argv[2] if len(sys.argv) > 2 else 'nvjet_sm90_tst_192x192_64x4_1x2_h_bz_coopB_TNN'
cut = max(float(r['start_us']) + float(r['duration_us']) for r in rows if r['kernel'] == big)
end = max(float(r['start_us']) + float(r['duration_us']) for r in rows)
for name, part in (('SigLIP + prefix', [r for r in rows if float(r['start_us']) < cut]),
                   ('denoising steps', [r for r in rows if float(r['start_us']) >= cut])):
    kinds = collections.Counter()
    for r in part:
        kinds[r['kind']] += float(r['duration_us']) / 1e3
    span = cut if name == 'SigLIP + prefix' else end - cut
    print(f"{name}: {span / 1e3:.1f} ms span; " + ', '.join(f'{k} {v:.2f}' for k, v in kinds.most_common()))
