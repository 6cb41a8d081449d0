#!/usr/bin/env python3
"""Records what a tlbsim binary writes for every shipped input, or compares two records.

A change that should move no figure (a refactor, a speed-up) must leave every
byte of these outputs as it was:

  - every shipped topology x every shipped workload under the topology's
    default preset: the CSV row and the per-CPU CSV (--shrunk: the workloads
    made small with the --set values of tests/test_presets.c's table, which
    is what CI runs);
  - every shipped preset on the machines where it is correct (as
    tests/test_presets.c pairs them), every shipped workload;
  - a trace and a time series of three short runs, one per architecture;
  - with --validation, every run of docs/validation.md (plots/validation/).

Usage:
  bench/same_csv.py record DIR [--tlbsim BIN] [--jobs N] [--shrunk] [--validation]
  bench/same_csv.py compare DIR_BEFORE DIR_AFTER
  bench/same_csv.py check [--tlbsim BIN] [--shrunk] ...   (record into a temporary
        directory and compare with --against DIR)
  bench/same_csv.py digest FILE [--tlbsim BIN] [--jobs N]   (record the shrunk set
        and write one SHA-256 per output into FILE)
  bench/same_csv.py verify FILE [--tlbsim BIN] [--jobs N]   (record the shrunk set
        and compare each output's SHA-256 with FILE's)
  --threads N (record, check, digest, verify): every run on N host threads; the
  outputs must not depend on it (CI verifies with 1 and with tlbsim's default).

record writes one file per output into DIR and DIR/index.tsv (name, command);
compare prints each file that differs and exits 1 if any does. Two columns
of the CSV are left out of the record: tlbsim_version (it names the commit, so
it changes with every one) and events (the engine's dispatches: how the host
computed the run, not what the simulated machine did; a speed-up such as a
longer lookahead changes it and no simulated figure).

A change that adds a column (or drops one) changes every CSV, yet should move
no figure: compare then compares the columns both files of a pair have, by
name, row by row, and lists the columns that only one record has (with how
many files); a pair that is the same on its shared columns counts as
identical. Everything else (rows, values, refusals, other files) is compared
byte for byte.

digest and verify are what CI runs (.ci/run): bench/shrunk.sha256 holds the
SHA-256 of every output of the shrunk set as the committed source writes it,
and verify fails on any output that is missing, new or different. A commit
that means to change outputs (a new input, a new column, a model change)
regenerates the file with digest, after compare against the previous
binary's record has shown which files moved and why.
"""
import hashlib
import argparse
import concurrent.futures
import csv
import filecmp
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# tests/test_presets.c's shrink table, per workload (kept in step with it:
# test_presets fails on a shipped workload without an entry, and this script
# on a workload it does not know).
SHRINK = {
    "munmap16": ["workload.file_size=8M", "workload.tail_ms=1"],
    "munmap": ["workload.file_size=8M", "workload.tail_ms=1"],
    "mprotect-thp": ["workload.file_size=32M", "workload.threads=4", "workload.tail_ms=1"],
    "madv-pageout": ["workload.iterations=10"],
    "madv-local-flush": ["workload.iterations=10"],
    "smt-pair": ["workload.span=4M", "workload.rounds=4"],
    "netperf-lazy": ["workload.requests=24"],
    "tlb_flush1": ["workload.iterations=40", "workload.warmup=4", "workload.threads=4"],
    "tlb_flush2": ["workload.iterations=40", "workload.warmup=4", "workload.threads=4",
                   "workload.pages=16"],
    "tlb_flush3": ["workload.iterations=40", "workload.warmup=4", "workload.threads=4"],
    "import-churn": ["workload.cycles_per_us=340"],
    "import-xz": ["workload.cycles_per_us=340"],
    "munmap-sleepers": ["workload.munmaps=16", "workload.threads=3"],
    "pingpong": ["workload.rounds=20"],
    "fork-exit": ["workload.forks=5"],
    "latr-micro": ["workload.iterations=20"],
    "madv-dontneed-touch": ["workload.iterations=20", "workload.threads=4"],
    "apache-churn": ["workload.requests=10", "workload.threads=8"],
    "numa-migrate": ["workload.scans=10"],
}

# Where each preset is correct (tests/test_presets.c).
PRESET_MACHINES = {
    "x86": ["haswell-i7"],
    "riscv": ["th1520", "sifive-unmatched"],
    "arm64": ["arm64-n1"],
    "x86-rar": ["skylake-sp-2s-48-rar"],
    "x86-coherent": ["skylake-sp-2s-48-unitd"],
    "x86-directory": ["skylake-sp-2s-48-didi"],
}

# Full-size runs that take minutes are run shrunk even without --shrunk.
SLOW_FULL = {("synthetic-1024", w) for w in SHRINK}

TIMELINES = [("haswell-i7", "munmap", "linux-4.19"), ("arm64-n1", "madv-pageout", "arm64-6.5"),
             ("th1520", "netperf-lazy", "riscv-6.8")]


def names(kind):
    d = os.path.join(ROOT, kind)
    return sorted(f[:-5] for f in os.listdir(d) if f.endswith(".json"))


def preset_arch(name):
    if name.startswith("riscv"):
        return "riscv"
    if name.startswith("arm64"):
        return "arm64"
    if name == "intel-rar":
        return "x86-rar"  # RAR needs the machine's support
    if name == "unitd":
        return "x86-coherent"  # so do coherent TLBs
    if name == "didi":
        return "x86-directory"  # and a TLB directory
    return "x86"


def cases(shrunk, validation):
    """(name, argv without the binary, [(flag, file suffix)...]) per output set."""
    out = []
    workloads = names("workloads")
    for w in workloads:
        if w not in SHRINK:
            raise SystemExit(f"same_csv: shipped workload {w} has no SHRINK entry: add one")
    for t in names("topologies"):
        for w in workloads:
            small = shrunk or (t, w) in SLOW_FULL
            sets = SHRINK[w] if small else []
            argv = ["-T", t, "-w", w] + [a for s in sets for a in ("--set", s)]
            out.append((f"matrix-{t}-{w}{'-small' if small else ''}", argv, ["--per-cpu"]))
    for p in names("policies"):
        for t in PRESET_MACHINES[preset_arch(p)]:
            for w in workloads:
                argv = ["-T", t, "-w", w, "-p", p] + [a for s in SHRINK[w] for a in ("--set", s)]
                out.append((f"preset-{p}-{t}-{w}", argv, []))
    for t, w, p in TIMELINES:
        argv = ["-T", t, "-w", w, "-p", p] + [a for s in SHRINK[w] for a in ("--set", s)]
        argv += ["--interval", "20000"]
        out.append((f"timeline-{t}-{w}", argv, ["--trace", "--timeseries"]))
    if validation:
        sys.path.insert(0, os.path.join(ROOT, "plots"))
        from validation.common import keystr  # noqa: E402  (plots/ is not on the path)
        from validation.runner import all_runs  # noqa: E402
        for run in all_runs():
            argv = run.argv("tlbsim")[1:]
            argv = [a for a in argv if a != "--host-time" and not a.startswith("--per-cpu")]
            key = keystr(run.key).replace("/", "-").replace(" ", "_")
            out.append((f"validation-exp{run.exp}-{key}", argv, []))
    return out


# Columns that say how the host computed a run, not what the simulated machine did.
HOST_COLUMNS = ("tlbsim_version", "events")


def drop_host_columns(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return
    keep = [i for i, name in enumerate(rows[0]) if name not in HOST_COLUMNS]
    if len(keep) == len(rows[0]):
        return
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([r[i] for i in keep] for r in rows)


def record(args):
    os.makedirs(args.dir, exist_ok=True)
    todo = cases(args.shrunk, args.validation)

    def one(case):
        name, argv, extra = case
        files = [os.path.join(args.dir, name + ".csv")]
        full = [args.tlbsim] + argv + ["-q", "-o", files[0]]
        if args.threads is not None:
            full += ["--threads", str(args.threads)]
        for flag in extra:
            suffix = {"--per-cpu": "-cpus.csv", "--trace": "-trace.json",
                      "--timeseries": "-series.csv"}[flag]
            files.append(os.path.join(args.dir, name + suffix))
            full += [flag, files[-1]]
        p = subprocess.run(full, capture_output=True, text=True)
        status = "" if p.returncode == 0 else f"exit {p.returncode}: {p.stderr.strip()}"
        if p.returncode != 0:
            # A refusal is an output too: it must stay the same.
            with open(files[0], "w") as f:
                f.write(f"exit {p.returncode}\n{p.stderr}")
        else:
            drop_host_columns(files[0])
        return name, shlex.join(["tlbsim"] + argv), status

    done = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool, \
            open(os.path.join(args.dir, "index.tsv"), "w") as index:
        for name, command, status in pool.map(one, todo):
            done += 1
            index.write(f"{name}\t{command}\t{status}\n")
            if not args.quiet:
                print(f"[{done}/{len(todo)}] {name} {status}", file=sys.stderr, flush=True)
    print(f"same_csv: {len(todo)} runs recorded in {args.dir}", file=sys.stderr)


def read_csv(path):
    """The rows of a CSV output, or None for a refusal or a file that is no CSV."""
    with open(path, newline="") as f:
        text = f.read()
    if not path.endswith(".csv") or text.startswith("exit "):
        return None
    return list(csv.reader(text.splitlines()))


def same_shared_columns(pa, pb, only):
    """Whether two CSVs whose headers differ agree on the columns both have,
    in every row; the columns one lacks are counted into only[(side, name)]."""
    ra, rb = read_csv(pa), read_csv(pb)
    if not ra or not rb or ra[0] == rb[0] or len(ra) != len(rb):
        return False
    ha, hb = ra[0], rb[0]
    shared = [c for c in ha if c in hb]
    if len(set(ha)) != len(ha) or len(set(hb)) != len(hb):
        return False  # a repeated name: no column to pair it with
    ia, ib = [ha.index(c) for c in shared], [hb.index(c) for c in shared]
    for x, y in zip(ra[1:], rb[1:]):
        if len(x) != len(ha) or len(y) != len(hb):
            return False
        if [x[i] for i in ia] != [y[i] for i in ib]:
            return False
    for side, header, other in (("before", ha, hb), ("after", hb, ha)):
        for c in header:
            if c not in other:
                only[(side, c)] = only.get((side, c), 0) + 1
    return True


def compare(a, b):
    fa = sorted(f for f in os.listdir(a) if f != "index.tsv")
    fb = sorted(f for f in os.listdir(b) if f != "index.tsv")
    bad = sorted(set(fa) ^ set(fb))
    for f in bad:
        print(f"only in one record: {f}")
    only = {}
    differ = [f for f in sorted(set(fa) & set(fb))
              if not filecmp.cmp(os.path.join(a, f), os.path.join(b, f), shallow=False)
              and not same_shared_columns(os.path.join(a, f), os.path.join(b, f), only)]
    for f in differ:
        print(f"differs: {f}")
    for (side, column), n in sorted(only.items()):
        print(f"column only {side}: {column} ({n} files; the shared columns are identical)")
    same = len(set(fa) & set(fb)) - len(differ)
    print(f"same_csv: {same} files identical, {len(differ)} differ, {len(bad)} unpaired")
    return 1 if differ or bad else 0


def digests(directory):
    """{output name: SHA-256 hex} of a record (index.tsv left out)."""
    out = {}
    for f in sorted(os.listdir(directory)):
        if f == "index.tsv":
            continue
        with open(os.path.join(directory, f), "rb") as fh:
            out[f] = hashlib.sha256(fh.read()).hexdigest()
    return out


def read_digest_file(path):
    out = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            parts = line.split("  ", 1)
            if len(parts) != 2 or len(parts[0]) != 64:
                raise SystemExit(f"{path}:{number}: expected '<sha256>  <output name>'")
            out[parts[1]] = parts[0]
    return out


def write_digest_file(path, table):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("# bench/same_csv.py digest: SHA-256 of every output of the shrunk set\n")
        for name in sorted(table):
            f.write(f"{table[name]}  {name}\n")
    os.replace(tmp, path)


def verify(expected, got):
    missing = sorted(set(expected) - set(got))
    new = sorted(set(got) - set(expected))
    differ = sorted(n for n in set(expected) & set(got) if expected[n] != got[n])
    for n in missing:
        print(f"missing: {n}")
    for n in new:
        print(f"new: {n}")
    for n in differ:
        print(f"differs: {n}")
    print(f"same_csv: {len(got) - len(new) - len(differ)} outputs as recorded, "
          f"{len(differ)} differ, {len(missing)} missing, {len(new)} new")
    if differ or missing or new:
        print("same_csv: outputs changed. If the change is meant, record the previous binary "
              "and this one (record, compare) to see what moved, then regenerate the file "
              "with 'digest'.")
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("record", "check"):
        r = sub.add_parser(name)
        if name == "record":
            r.add_argument("dir")
        else:
            r.add_argument("--against", required=True, help="a record to compare with")
        r.add_argument("--tlbsim", default=os.environ.get("TLBSIM",
                                                          os.path.join(ROOT, "build", "tlbsim")))
        r.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
        r.add_argument("--threads", type=int, help="host threads per run (default: tlbsim's)")
        r.add_argument("--shrunk", action="store_true")
        r.add_argument("--validation", action="store_true")
        r.add_argument("--quiet", action="store_true")
    for name in ("digest", "verify"):
        d = sub.add_parser(name)
        d.add_argument("file")
        d.add_argument("--tlbsim", default=os.environ.get("TLBSIM",
                                                          os.path.join(ROOT, "build", "tlbsim")))
        d.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
        d.add_argument("--threads", type=int, help="host threads per run (default: tlbsim's)")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = ap.parse_args()
    if args.cmd == "compare":
        sys.exit(compare(args.before, args.after))
    args.tlbsim = os.path.abspath(args.tlbsim)
    if args.cmd in ("digest", "verify"):
        expected = read_digest_file(args.file) if args.cmd == "verify" else None
        args.shrunk, args.validation, args.quiet = True, False, True
        with tempfile.TemporaryDirectory(prefix="same_csv.") as d:
            args.dir = d
            record(args)
            got = digests(d)
        if args.cmd == "digest":
            write_digest_file(args.file, got)
            print(f"same_csv: {len(got)} digests written to {args.file}", file=sys.stderr)
            return
        sys.exit(verify(expected, got))
    if args.cmd == "record":
        record(args)
        return
    with tempfile.TemporaryDirectory(prefix="same_csv.") as d:
        args.dir = d
        record(args)
        sys.exit(compare(args.against, d))


if __name__ == "__main__":
    main()
