#!/usr/bin/env python3
"""Writes tlbsim.1, the man page, from the binary's own --help texts.

The options, their arguments and descriptions, the examples, the exit codes and where bare
names are looked up all come from `tlbsim --help` and `tlbsim sweep --help` (GOption's
output: src/cli/options.c, src/cli/main.c), so the page cannot drift from the binary; only
the section frame and the FILES layout are written here.  The build runs it after linking
tlbsim (CMakeLists.txt); the page is installed to share/man/man1.

Usage: manpage.py TLBSIM [-o OUT]   (default: stdout)
"""
import os
import re
import subprocess
import sys

# One option line of GOption's --help: "  -T, --topology=NAME    Machine: ...".
OPTION = re.compile(r"^  (?:-(\w), )?--([\w-]+)(?:=(\S+))?\s{2,}(.*)$")


def run(tlbsim, *args):
    """stdout of tlbsim ARGS in the C locale (plain ASCII: "[OPTION...]")."""
    env = dict(os.environ, LC_ALL="C")
    env.pop("TLBSIM_DATADIR", None)
    return subprocess.run([tlbsim, *args], env=env, check=True, capture_output=True,
                          text=True).stdout


def parse_help(text):
    """{usage, tagline, summary (lines), options [(short, long, arg, text)], notes [paragraphs]}."""
    lines = text.splitlines()
    usage = next(i for i, line in enumerate(lines) if line == "Usage:")
    tagline = lines[usage + 1].split(" - ", 1)[1]
    start = lines.index("Application Options:")
    summary, i = [], usage + 2
    while not lines[i].endswith("Options:"):
        if lines[i]:
            summary.append(lines[i])
        i += 1
    options, i = [], start + 1
    while i < len(lines) and lines[i]:
        m = OPTION.match(lines[i])
        if not m:
            sys.exit(f"manpage.py: cannot read the option line {lines[i]!r}")
        options.append(m.groups())
        i += 1
    notes = [p.replace("\n", " ") for p in "\n".join(lines[i:]).strip().split("\n\n") if p]
    return {"tagline": tagline, "summary": summary, "options": options, "notes": notes}


def esc(text):
    """Running text for roff: backslashes and hyphens of words escaped."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def option_lines(options):
    out = []
    for short, long, arg, text in options:
        head = (f"\\fB\\-{short}\\fR, " if short else "") + f"\\fB\\-\\-{esc(long)}\\fR"
        if arg:
            head += f"=\\fI{esc(arg)}\\fR"
        out += [".TP", head, esc(text)]
    return out


def note(notes, prefix):
    """The paragraph of @notes that starts with @prefix, without it."""
    found = [n for n in notes if n.startswith(prefix)]
    if not found:
        sys.exit(f"manpage.py: --help has no paragraph starting {prefix!r}")
    return found[0][len(prefix):].strip()


def example_lines(summary):
    out = []
    for line in summary:
        command = re.sub(r"^\w+: ", "", line)
        if command.startswith("tlbsim") and not command.endswith("--help"):
            out += [".PP", ".nf", ".RS 4", esc(command), ".RE", ".fi"]
    return out


def page(tlbsim):
    version = run(tlbsim, "--version").strip()
    single = parse_help(run(tlbsim, "--help"))
    sweep = parse_help(run(tlbsim, "sweep", "--help"))
    single_names = {o[1] for o in single["options"]}
    sweep_only = [o for o in sweep["options"] if o[1] not in single_names]
    common = [o for o in single["options"] if o[1] in {s[1] for s in sweep["options"]}]
    single_only = [o for o in single["options"] if o[1] not in {s[1] for s in common}]
    needs = note(single["notes"], "Needs:")
    names = note(single["notes"], "Bare names")
    out = [
        '.TH TLBSIM 1 "" "%s" "User Commands"' % esc(version),
        ".SH NAME",
        "tlbsim \\- " + esc(single["tagline"]),
        ".SH SYNOPSIS",
        ".B tlbsim",
        "\\fB\\-T\\fR \\fITOPOLOGY\\fR \\fB\\-w\\fR \\fIWORKLOAD\\fR [\\fIOPTION\\fR...]",
        ".br",
        ".B tlbsim sweep",
        "[\\fIOPTION\\fR...] \\fB\\-\\-vary\\fR \\fIKEY\\fR=\\fIV1\\fR,\\fIV2\\fR,...",
        ".SH DESCRIPTION",
        "\\fBtlbsim\\fR runs one simulation of a topology (the machine), a workload and a",
        "flush policy, each a JSON file or a bundled name, and writes one CSV row of",
        "counters.  \\fBtlbsim sweep\\fR runs a grid of such runs into one CSV",
        "(see \\fBSWEEP\\fR).",
        ".SH OPTIONS",
        "Options of single runs and sweeps:",
        *option_lines(common),
        ".PP",
        "Options of single runs only:",
        *option_lines(single_only),
        ".PP",
        esc(needs),
        ".SH SWEEP",
        "\\fBtlbsim sweep\\fR \\- " + esc(sweep["tagline"]) + ".",
        "It takes the options of single runs and sweeps above, and:",
        *option_lines(sweep_only),
        ".PP",
        *[line for n in sweep["notes"] if not n.startswith("Exit codes:")
          for line in (esc(n), ".PP")][:-1],
        ".SH EXIT STATUS",
        esc(note(single["notes"], "Exit codes:")),
        ".PP",
        "Sweeps: " + esc(note(sweep["notes"], "Exit codes:")),
        ".SH ENVIRONMENT",
        ".TP",
        ".B TLBSIM_DATADIR",
        "A folder searched first for bare names.  " + esc("Bare names " + names),
        ".SH FILES",
        ".TP",
        "\\fI../share/tlbsim/\\fR{\\fItopologies\\fR,\\fIworkloads\\fR,\\fIpolicies\\fR}\\fI/*.json\\fR",
        "The bundled inputs, beside the installed binary; "
        "\\fB\\-\\-list\\-topologies\\fR, \\fB\\-\\-list\\-workloads\\fR and "
        "\\fB\\-\\-list\\-policies\\fR name them.",
        ".SH EXAMPLES",
        *example_lines(single["summary"] + sweep["summary"]),
    ]
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "-o"):
        sys.exit(__doc__.split("\n\n")[-1].strip())
    text = page(args[0])
    if len(args) == 1:
        sys.stdout.write(text)
        return
    tmp = args[2] + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args[2])


if __name__ == "__main__":
    main()
