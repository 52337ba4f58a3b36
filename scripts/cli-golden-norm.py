#!/usr/bin/python3
"""Strip timing values from irtool outputs in place (scripts/cli-golden.sh).

JSON values whose key names a duration or a measured speed, and numbers
followed by a time unit or a tok/s rate in text, become T; everything else
is left byte for byte.
"""
import re
import sys

KEY = re.compile(r'("(?:[A-Za-z_]*(?:_ms|_ns|_us|_seconds|time_s|tok_s|tokens_per_s|tok_per_s_measured|stddev|elapsed|wall)[A-Za-z_]*|host_dispatch_ns_per_token|duration)"\s*:\s*)-?[0-9.eE+-]+')
UNIT = re.compile(r'-?\b[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?\s*(?:ms|µs|us|ns|s|tok/s|t/s|tokens/s)\b')
# compile's pass table (name, changed, ms, ops) and plan --compare's
# (strategy, arena, x LB, ms).
PASSROW = re.compile(r'^(\s+\S+\s+(?:yes|no))\s+[0-9.]+', re.M)
CMPROW = re.compile(r'^(\s+[a-z][a-z0-9-]*\s+[0-9]+\s+[0-9.]+\s+)[0-9.]+ *', re.M)
PM = re.compile(r'[0-9]+(?:\.[0-9]+)? ± [0-9]+(?:\.[0-9]+)?')

for path in sys.argv[1:]:
    with open(path, 'rb') as f:
        data = f.read()
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError:
        continue
    text = KEY.sub(lambda m: m.group(1) + ' T', text)
    text = UNIT.sub('T', text)
    text = PASSROW.sub(lambda m: m.group(1) + ' T', text)
    text = CMPROW.sub(lambda m: m.group(1) + 'T ', text)
    text = PM.sub('T ± T', text)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
