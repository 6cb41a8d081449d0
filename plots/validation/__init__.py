"""The reproductions of published measurements in docs/validation.md, as a package.

  common       Run, execute(), the CSVs of plots/results/, number and table helpers, Section,
               plot() (gnuplot); imports no other module of the package
  exp1 ... exp7  one experiment each: NAME (its CSV), its published figures, runs() and
               section(rows), which writes the experiment's part of the report and draws
               its figure; exp2 holds the IvyBridge-EP grid (NS, PUB_B, cell_sets())
  calibration  the fit of a machine's estimates to that grid (plots/calibrate.py)
  runner       the options, the run pool, docs/validation.md and README.md's summary
               (plots/validate.py, which plots/report.sh runs)

Imports go one way: common <- exp1 ... exp7 <- calibration <- runner (exp3 uses exp2's N,
calibration exp2's grid).  Importing the package runs nothing: its modules are loaded on
demand (tests/py/fake_tlbsim.py loads exp2 alone on every start).
"""
