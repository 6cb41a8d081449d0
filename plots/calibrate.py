#!/usr/bin/env python3
"""Fits a machine's unmeasured costs, once, to published figures open for calibration
(docs/references.md#calibration-rule).

The command line of plots/validation/calibration.py, which holds the fit and says what it
fits.

Usage: plots/calibrate.py [--tlbsim PATH] [--jobs N] [--write] [MACHINE ...]
  --write  store the fitted values and their source in topologies/MACHINE.json
"""
from validation.calibration import main

if __name__ == "__main__":
    main()
