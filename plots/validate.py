#!/usr/bin/env python3
"""Reproductions of published TLB-flush measurements: writes docs/validation.md.

The command line of the package plots/validation/ (its runner module has the options and
the driver); plots/report.sh runs it.

Usage: plots/validate.py [--tlbsim PATH] [--jobs N] [--reuse] [--full] [--only 2,3]
"""
from validation.runner import main

if __name__ == "__main__":
    main()
