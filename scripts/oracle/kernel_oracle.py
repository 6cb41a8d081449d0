#!/usr/bin/env python3
"""The kernel oracle: the scenarios on a real Linux kernel under QEMU, and on
tlbsim, tlb:tlb_flush reason by reason.  See docs/kernel-oracle.md.

Usage: scripts/kernel-oracle.sh [--kernel BZIMAGE] [--cpus N] [--boots K]
           [--out DIR] [--report FILE] [--recorded DIR] [SCENARIO...]
"""

import argparse
import csv
import io
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402
import guest as guestlib  # noqa: E402
import report  # noqa: E402

REPO = guestlib.REPO
PRESET = "linux-6.1"
# Seconds a scenario may run in the guest (the longest takes about 30 under
# TCG); beyond, busybox's timeout ends it and the run fails naming it.
SCENARIO_TIMEOUT = 300
BOOT_TRIES = 3


def load_scenarios(path, wanted):
    data = json.loads(Path(path).read_text())
    scenarios = data["scenarios"]
    names = [s["name"] for s in scenarios]
    for name in wanted:
        if name not in names:
            sys.exit(f"kernel-oracle: no scenario {name!r} in {path} (there are: "
                     f"{', '.join(names)})")
    if wanted:
        scenarios = [s for s in scenarios if s["name"] in wanted]
    return data, scenarios


def set_args(scenario):
    args = []
    for key, value in scenario["set"].items():
        args += ["--set", f"workload.{key}={value}"]
    return args


def guest_script(scenarios, boot_index, swap_mib):
    """/init: mount, a swap device on a RAM disk (MADV_PAGEOUT needs one),
    each scenario through tlbsim-native, every file framed on ttyS1."""
    lines = ["#!/bin/busybox sh",
             "/bin/busybox --install -s /bin",
             "mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev",
             "mount -t tracefs tracefs /sys/kernel/tracing",
             "export TLBSIM_DATADIR=/share/tlbsim",
             # One descriptor for every file sent: closing a serial tty whose
             # output has not drained (slow under TCG) may drop the rest.
             "exec 3>/dev/ttyS1",
             f"if [ -f /brd.ko ]; then insmod /brd.ko rd_nr=1 rd_size={swap_mib * 1024} && "
             "mkswap /dev/ram0 >/dev/null && swapon /dev/ram0; fi",
             "send() { echo \"" + guestlib.BEGIN + " $1 $2\" >&3; cat \"$3\" >&3; "
             "echo \"" + guestlib.END + "\" >&3; }",
             "uname -r >/tmp/uname"]
    for s in scenarios:
        name = s["name"]
        cmd = ["timeout", str(SCENARIO_TIMEOUT), "tlbsim-native", "-q", "-w", s["workload"],
               *set_args(s),
               "--seed", str(boot_index + 1), "--label", f"scenario={name}",
               "-o", f"/tmp/{name}.csv", "--per-cpu", f"/tmp/{name}-cpu.csv"]
        lines += [" ".join(shlex.quote(c) for c in cmd) + f" 2>/tmp/{name}.err",
                  f"echo $? >/tmp/{name}.rc",
                  f"send {name} status /tmp/{name}.rc", f"send {name} stderr /tmp/{name}.err",
                  f"[ -f /tmp/{name}.csv ] && send {name} csv /tmp/{name}.csv",
                  f"[ -f /tmp/{name}-cpu.csv ] && send {name} percpu /tmp/{name}-cpu.csv"]
    lines += ["send _ uname /tmp/uname", "sync", "poweroff -f"]
    return "\n".join(lines) + "\n"


def complete(parts, scenarios):
    """Did every scenario send its files whole?  A status always; after a
    success, its CSV and per-CPU CSV with every row as wide as the header."""
    if ("_", "uname") not in parts:
        return False
    for s in scenarios:
        status = parts.get((s["name"], "status"), "").strip()
        if not status:
            return False
        if status != "0":
            continue
        for kind in ("csv", "percpu"):
            rows = list(csv.reader(io.StringIO(parts.get((s["name"], kind), ""))))
            if len(rows) < 2 or any(len(r) != len(rows[0]) for r in rows):
                return False
    return True


def boot_until_done(args, guest, image, workdir, scenarios):
    """Boot until the guest powers off having sent every file whole.  Under
    TCG a vCPU now and then stalls in the kernel (an IPI that never arrives:
    the console shows soft lockups); with softlockup_panic the guest then
    dies, and the boot is tried again, at most BOOT_TRIES times, saying so."""
    for attempt in range(1, BOOT_TRIES + 1):
        text = guestlib.boot(guest, image, args.cpus, 2048, workdir, args.timeout)
        parts = guestlib.split_data(text or "")
        if complete(parts, scenarios):
            return parts
        console = (workdir / "console.log").read_text(errors="replace")
        why = ("a soft lockup" if "soft lockup" in console else
               "a file came back cut" if ("_", "uname") in parts else "no end")
        guestlib.say(f"{workdir.name}: the guest stopped early ({why}; try {attempt} of "
                     f"{BOOT_TRIES}); console: {workdir / 'console.log'}")
        (workdir / f"console-failed-{attempt}.log").write_text(console)
    sys.exit(f"kernel-oracle: {workdir.name} failed {BOOT_TRIES} times")


def run_kernel(args, scenarios, out):
    """Boot args.boots times; saves out/kernel/boot-K/<scenario>.{csv,percpu.csv}."""
    guestlib.ensure_qemu()
    guest = guestlib.fetch_guest(args.kernel)
    native = Path(args.native)
    kernel_name = None
    for k in range(args.boots):
        start = time.time()
        image = guestlib.initramfs(guest, native, guest_script(scenarios, k, 256))
        parts = boot_until_done(args, guest, image, out / "qemu" / f"boot-{k + 1}", scenarios)
        kernel_name = parts.get(("_", "uname"), "?").strip()
        dest = out / "kernel" / f"boot-{k + 1}"
        dest.mkdir(parents=True, exist_ok=True)
        for s in scenarios:
            name = s["name"]
            status = parts.get((name, "status"), "").strip()
            if status == "143":
                sys.exit(f"kernel-oracle: boot {k + 1}: {name} ran over {SCENARIO_TIMEOUT} s "
                         "in the guest and was stopped")
            if status != "0":
                err = parts.get((name, "stderr"), "(no output)")
                sys.exit(f"kernel-oracle: boot {k + 1}: {name} failed (exit {status or '?'}): "
                         f"{err.strip()}\n  console: {out / 'qemu' / f'boot-{k + 1}' / 'console.log'}")
            (dest / f"{name}.csv").write_text(parts[(name, "csv")])
            (dest / f"{name}.percpu.csv").write_text(parts[(name, "percpu")])
        guestlib.say(f"boot {k + 1}/{args.boots} ({kernel_name}): {len(scenarios)} scenarios "
                     f"in {time.time() - start:.0f} s")
    (out / "kernel" / "uname").write_text(kernel_name + "\n")


def run_tlbsim(args, scenarios, out):
    """Each scenario on tlbsim, seeds 1..boots: out/tlbsim/seed-S/<scenario>..."""
    topology = REPO / "topologies" / f"qemu-x86-{args.cpus}.json"
    if not topology.exists():
        sys.exit(f"kernel-oracle: no topology {topology.name} for --cpus {args.cpus}")
    for seed in range(1, args.boots + 1):
        dest = out / "tlbsim" / f"seed-{seed}"
        dest.mkdir(parents=True, exist_ok=True)
        for s in scenarios:
            name = s["name"]
            cmd = [args.tlbsim, "-q", "-T", str(topology), "-w", s["workload"], "-p", PRESET,
                   *set_args(s), "--seed", str(seed), "--label", f"scenario={name}",
                   "-o", str(dest / f"{name}.csv"), "--per-cpu", str(dest / f"{name}.percpu.csv")]
            res = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)
            if res.returncode != 0:
                sys.exit(f"kernel-oracle: tlbsim failed on {name}: {res.stderr.strip()}")


def read_runs(folder, name):
    rows, per_cpu = [], []
    for run in sorted(p for p in folder.iterdir() if p.is_dir()):
        rows += compare.read_rows((run / f"{name}.csv").read_text())
        per_cpu.append(compare.read_rows((run / f"{name}.percpu.csv").read_text()))
    return rows, per_cpu


def compare_all(out, scenarios):
    results = []
    for s in scenarios:
        k_rows, k_cpu = read_runs(out / "kernel", s["name"])
        s_rows, s_cpu = read_runs(out / "tlbsim", s["name"])
        ranks = compare.rank_verdicts(compare.ranked(k_cpu), compare.ranked(s_cpu))
        results.append({"scenario": s, "lines": compare.compare_scenario(k_rows, s_rows),
                        "per_cpu": (compare.per_cpu_counts(k_cpu), compare.per_cpu_counts(s_cpu)),
                        "ranks": ranks})
    return results


def build(build_dir):
    """tlbsim and tlbsim-native (Release) in @build_dir."""
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build_dir), "-j", str(os.cpu_count() or 1),
                    "--target", "tlbsim", "tlbsim-native"], check=True, stdout=subprocess.DEVNULL)
    return str(build_dir / "tlbsim"), str(build_dir / "tlbsim-native")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="kernel-oracle.sh", description=__doc__.split("\n\n")[0])
    p.add_argument("scenario", nargs="*", help="scenario names (default: all)")
    p.add_argument("--kernel", help="boot this bzImage instead of Debian's linux-image-amd64")
    p.add_argument("--cpus", type=int, help="vCPUs (default: the scenario file's)")
    p.add_argument("--boots", type=int, default=3, help="kernel boots, and tlbsim seeds (3)")
    p.add_argument("--scenarios", default=str(REPO / "scripts" / "oracle" / "scenarios.json"))
    p.add_argument("--out", default="oracle-out", help="run folder (default oracle-out)")
    p.add_argument("--report", help="write the markdown report here (default OUT/kernel-oracle.md)")
    p.add_argument("--recorded", action="store_true",
                   help="no QEMU: compare OUT/kernel as recorded by an earlier run")
    p.add_argument("--tlbsim", help="tlbsim binary (default: build it)")
    p.add_argument("--native", help="tlbsim-native binary (default: build it)")
    p.add_argument("--build-dir", default=str(REPO / "build-oracle"))
    p.add_argument("--timeout", type=int, default=600, help="seconds per boot (600)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless every counter agrees within the tolerance")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    data, scenarios = load_scenarios(args.scenarios, args.scenario)
    args.cpus = args.cpus or data["cpus"]
    out = Path(args.out)
    if not (args.tlbsim and (args.native or args.recorded)):
        tlbsim, native = build(Path(args.build_dir))
        args.tlbsim, args.native = args.tlbsim or tlbsim, args.native or native
    if not args.recorded:
        run_kernel(args, scenarios, out)
    run_tlbsim(args, scenarios, out)
    results = compare_all(out, scenarios)
    kernel_name = (out / "kernel" / "uname").read_text().strip()
    text = report.markdown(results, kernel_name, args.cpus, args.boots)
    dest = Path(args.report) if args.report else out / "kernel-oracle.md"
    with tempfile.NamedTemporaryFile("w", dir=dest.parent, delete=False) as tmp:
        tmp.write(text)
    os.replace(tmp.name, dest)
    agree, total = compare.summary_counts(results)
    print(report.summary_text(results), end="")
    every, scenarios_n = compare.summary_ranks(results)
    guestlib.say(f"{agree} of {total} counters agree; per-CPU ranks agree in {every} of "
                 f"{scenarios_n} scenarios; report: {dest}")
    return 0 if agree == total or not args.check else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
