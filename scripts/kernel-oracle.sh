#!/usr/bin/env bash
# The kernel oracle: runs scripts/oracle/scenarios.json on Debian's Linux
# kernel booted under QEMU (TCG) and on tlbsim, and compares the tlb:tlb_flush
# counts reason by reason (docs/kernel-oracle.md).  --help for the options.
set -euo pipefail
exec python3 -B "$(dirname "$0")/oracle/kernel_oracle.py" "$@"
