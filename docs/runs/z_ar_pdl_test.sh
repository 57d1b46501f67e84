#!/bin/bash
# Session 22 (2026-12-06), issue 17: the PDL GPU test alone (~2.5 min; carry [".whl", ".gl"]), for a call with little
# device time left; docs/runs/z_aq_pdl.sh is the full call (the test, then bench rows with and without PDL).
source docs/closed_loop/device_setup.sh  # T0, el, left
timeout $(left ${TESTS_END:-170}) python3 -m pytest -q -rs test_equivalence.py -p no:cacheprovider \
  -k "pdl_sampler" > $OUT/gpu_tests.txt 2>&1; el "gpu tests rc $?"
grep -E "passed|failed|Error|assert |SKIP" $OUT/gpu_tests.txt | tail -8
