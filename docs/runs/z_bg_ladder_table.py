"""The ladder of one `bench.py --rows=ladder` run as a markdown table, each row's gain against the row above.
usage: PYTHONPATH=. python docs/runs/z_bg_ladder_table.py <out_dir>/results.json (setup s: build, compile and the warm-up steps)"""
import gzip
import json
import sys

import bench

rows = json.load(gzip.open(sys.argv[1], 'rt') if sys.argv[1].endswith('.gz') else open(sys.argv[1]))
order = [label for _, label, _ in bench.LADDER]  # the ladder's order, whatever order the rows ran in
rows = sorted((r for r in rows if r['row'] in order), key=lambda r: order.index(r['row']))
print('| setting (cumulative) | ms/step | samples/s | vs the row above | MFU | peak GiB | setup s |')
print('|---|---|---|---|---|---|---|')
for i, r in enumerate(rows):
    prev = rows[i - 1] if i else None
    gain = (f"{r['ms'] - prev['ms']:+.1f} ms, x{prev['ms'] / r['ms']:.2f} samples/s" if prev else '')
    print(f"| {i + 1}. {r['row']} | {r['ms']:.1f} | {r['samples_s']:.1f} | {gain} | {100 * r['mfu']:.1f}% | "
          f"{r['peak_gib']:.1f} | {r['setup_s']:.0f} |")
