"""Where a profiled step's GPU idle time lies: the gaps between kernels by size, by 50 ms window, the largest ones
and the host-to-device copies. usage: python docs/runs/z_bi_idle_gaps.py <kernels_*.csv[.gz]> (bench.py --profile; the kernels counted include
memcpy and memset events)"""
import collections
import csv
import gzip
import sys

rows = list(csv.DictReader((gzip.open if sys.argv[1].endswith('.gz') else open)(sys.argv[1], 'rt')))
ev = sorted((float(r['start_us']), float(r['duration_us']), r['kind'], r['kernel']) for r in rows)
end, gaps = 0.0, []
for i, (s, d, _, _) in enumerate(ev):
    if i and s > end:
        gaps.append((s - end, i, s))
    end = max(end, s + d)
print(f'{sys.argv[1]}: {len(ev)} kernels over {end / 1e3:.1f} ms, idle {sum(g for g, _, _ in gaps) / 1e3:.2f} ms in {len(gaps)} gaps')
size = collections.Counter()
for g, _, _ in gaps:
    size['< 5 us' if g < 5 else '5-20 us' if g < 20 else '20-100 us' if g < 100 else '>= 100 us'] += g
print('idle ms by gap size:', {k: round(v / 1e3, 2) for k, v in size.items()})
window = collections.Counter()
for g, _, s in gaps:
    window[int(s // 50e3) * 50] += g
print('idle ms by 50 ms window of the step:', {k: round(v / 1e3, 2) for k, v in sorted(window.items())})
first = [g for g, _, s in gaps if s < 4e3]
print(f'idle in the first 4 ms: {sum(first) / 1e3:.2f} ms in {len(first)} gaps')
print('host-to-device copies at (us):', [round(s, 1) for s, _, _, k in ev if k.startswith('Memcpy HtoD')])
for g, i, s in sorted(gaps, reverse=True)[:8]:
    print(f'{g:7.1f} us at {s / 1e3:6.2f} ms, before {ev[i][3][:90]}')
