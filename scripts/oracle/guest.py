"""The guest side of the kernel oracle: what to fetch, the initramfs, the boot.

Everything the guest needs comes from Debian's archive into a cache folder
(apt-get download + dpkg-deb -x): busybox-static and a linux-image package.
Nothing is installed into the host's /boot.  QEMU itself is the only package
installed system-wide (apt-get install, as root), because it needs its
shared libraries in place.
"""

import gzip
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Marks in the guest's data port (the second serial line): every file the
# guest sends back is framed by them, so console noise can never mix in.
BEGIN, END = "@@@tlbsim-oracle-begin", "@@@tlbsim-oracle-end"


def say(msg):
    print(f"kernel-oracle: {msg}", file=sys.stderr, flush=True)


def cache_dir():
    base = os.environ.get("TLBSIM_ORACLE_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(xdg) / "tlbsim-oracle"


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def apt_knows(package):
    """Has apt a candidate for @package?  Refreshes the lists once if not
    (a machine whose lists were never fetched knows nothing)."""
    def known():
        out = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True)
        return "Candidate:" in out.stdout and "Candidate: (none)" not in out.stdout
    if known():
        return True
    if os.geteuid() == 0:
        say("apt knows no " + package + ": apt-get update")
        subprocess.run(["apt-get", "update", "-qq"], stdout=subprocess.DEVNULL)
    return known()


def ensure_qemu():
    """qemu-system-x86_64 on PATH, installed through apt when root."""
    if shutil.which("qemu-system-x86_64"):
        return
    if os.geteuid() != 0:
        sys.exit("kernel-oracle: qemu-system-x86_64 is missing; install it with "
                 "`apt-get install --no-install-recommends qemu-system-x86`")
    if not apt_knows("qemu-system-x86"):
        sys.exit("kernel-oracle: apt has no qemu-system-x86 package")
    say("installing qemu-system-x86 through apt")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "install", "-y", "-q", "--no-install-recommends", "qemu-system-x86"],
        env=env, stdout=subprocess.DEVNULL)


def fetch_deb(package, dest):
    """apt-get download @package and unpack it into @dest (once)."""
    done = dest / ".unpacked"
    if done.exists():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    dl = dest.parent / f".dl-{package}"
    shutil.rmtree(dl, ignore_errors=True)
    dl.mkdir(parents=True)
    if not apt_knows(package):
        sys.exit(f"kernel-oracle: apt has no package {package}")
    say(f"downloading {package}")
    run(["apt-get", "download", "-q", package], cwd=dl, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    debs = list(dl.glob("*.deb"))
    if len(debs) != 1:
        sys.exit(f"kernel-oracle: apt-get download {package} gave {len(debs)} packages")
    run(["dpkg-deb", "-x", str(debs[0]), str(dest)])
    shutil.rmtree(dl)
    done.write_text(package + "\n")
    return dest


def debian_kernel_package():
    """The linux-image package linux-image-amd64 depends on now."""
    if not apt_knows("linux-image-amd64"):
        sys.exit("kernel-oracle: apt knows no linux-image-amd64 (is the archive configured?)")
    out = run(["apt-cache", "depends", "linux-image-amd64"], capture_output=True,
              text=True).stdout
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Depends: linux-image-"):
            return line.split(":", 1)[1].strip()
    sys.exit("kernel-oracle: apt-cache knows no linux-image-amd64 (is the archive configured?)")


def fetch_guest(kernel=None):
    """Paths of busybox, the kernel image and the brd module (None with a
    user's own kernel: the guest then runs without a swap device)."""
    cache = cache_dir()
    busybox = fetch_deb("busybox-static", cache / "busybox-static") / "bin" / "busybox"
    if kernel:
        return {"busybox": busybox, "kernel": Path(kernel), "brd": None,
                "kernel_name": Path(kernel).name}
    pkg = debian_kernel_package()
    root = fetch_deb(pkg, cache / pkg)
    images = sorted((root / "boot").glob("vmlinuz-*"))
    brd = sorted((root / "lib" / "modules").glob("*/kernel/drivers/block/brd.ko*"))
    if not images:
        sys.exit(f"kernel-oracle: {pkg} holds no boot/vmlinuz-*")
    return {"busybox": busybox, "kernel": images[0], "brd": brd[0] if brd else None,
            "kernel_name": pkg}


class Cpio:
    """A newc archive, as the kernel's initramfs unpacker reads it."""

    def __init__(self):
        self.data = bytearray()
        self.ino = 1

    def _entry(self, name, mode, body=b"", nlink=1):
        name_b = name.encode() + b"\0"
        fields = [self.ino, mode, 0, 0, nlink, 0, len(body), 0, 0, 0, 0, len(name_b), 0]
        self.ino += 1
        self.data += b"070701" + b"".join(b"%08X" % f for f in fields) + name_b
        self.data += b"\0" * (-len(self.data) % 4) + body
        self.data += b"\0" * (-len(self.data) % 4)

    def dir(self, name):
        self._entry(name, stat.S_IFDIR | 0o755, nlink=2)

    def file(self, name, body, mode=0o755):
        self._entry(name, stat.S_IFREG | mode, body)

    def symlink(self, name, target):
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def finish(self):
        self._entry("TRAILER!!!", 0)
        return gzip.compress(bytes(self.data), 6)


def shared_libraries(binary):
    """The shared objects @binary loads (ldd), with the dynamic loader."""
    out = run(["ldd", str(binary)], capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
            libs.append(parts[2])
        elif parts and parts[0].startswith("/"):
            libs.append(parts[0])
    return libs


def add_tree(cpio, src, dest):
    for path in sorted(Path(src).rglob("*")):
        rel = f"{dest}/{path.relative_to(src)}"
        if path.is_dir():
            cpio.dir(rel)
        else:
            cpio.file(rel, path.read_bytes(), 0o644)


def initramfs(guest, native, script):
    """The guest's root: busybox, tlbsim-native with its libraries, the
    bundled workloads as $TLBSIM_DATADIR, brd.ko and /init running @script."""
    cpio = Cpio()
    made = set()
    for d in ["bin", "dev", "proc", "sys", "tmp", "lib", "lib64", "share", "share/tlbsim"]:
        cpio.dir(d)
        made.add(d)
    cpio.file("bin/busybox", guest["busybox"].read_bytes())
    cpio.file("bin/tlbsim-native", Path(native).read_bytes())
    for lib in shared_libraries(native):
        real = Path(lib).resolve()
        parent = lib.lstrip("/").rsplit("/", 1)[0]
        for i, _ in enumerate(parent.split("/")):
            d = "/".join(parent.split("/")[: i + 1])
            if d not in made:
                cpio.dir(d)
                made.add(d)
        cpio.file(lib.lstrip("/"), real.read_bytes())
    for kind in ["workloads", "policies", "topologies"]:
        cpio.dir(f"share/tlbsim/{kind}")
        add_tree(cpio, REPO / kind, f"share/tlbsim/{kind}")
    if guest["brd"]:
        cpio.file("brd.ko", Path(guest["brd"]).read_bytes(), 0o644)
    cpio.file("init", script.encode())
    return cpio.finish()


def boot(guest, image, cpus, memory_mib, workdir, timeout):
    """Boot once; returns the data port's text, or None if the guest did not
    power off within @timeout s.  The console goes to console.log in
    @workdir for when something fails."""
    workdir.mkdir(parents=True, exist_ok=True)
    initrd = workdir / "initramfs.cpio.gz"
    initrd.write_bytes(image)
    data, console = workdir / "data.txt", workdir / "console.log"
    for f in (data, console):
        f.unlink(missing_ok=True)
    cmd = ["qemu-system-x86_64", "-accel", "tcg,thread=multi", "-cpu", "max",
           "-smp", f"{cpus},sockets=1,cores={cpus},threads=1", "-m", str(memory_mib),
           "-kernel", str(guest["kernel"]), "-initrd", str(initrd),
           "-append", "console=ttyS0 quiet panic=-1 softlockup_panic=1 "
           "transparent_hugepage=always",
           "-display", "none", "-monitor", "none", "-no-reboot",
           "-serial", f"file:{console}", "-serial", f"file:{data}"]
    try:
        subprocess.run(cmd, check=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None
    return data.read_text(errors="replace")


def split_data(text):
    """{(scenario, kind): body} from the data port's framed sections."""
    out, current, lines = {}, None, []
    for line in text.replace("\r", "").splitlines():
        if line.startswith(BEGIN):
            current, lines = tuple(line.split()[1:3]), []
        elif line.startswith(END) and current:
            out[current] = "\n".join(lines) + ("\n" if lines else "")
            current = None
        elif current:
            lines.append(line)
    return out
