# Sourced by the other scripts: install the Debian packages tlbsim needs, if
# any is missing.  Uses sudo when not root.
tlbsim_packages="build-essential cmake ninja-build pkg-config libglib2.0-dev libcjson-dev libcriterion-dev gnuplot-nox parallel valgrind python3"

tlbsim_install_deps() {
	local missing=""
	for p in $tlbsim_packages; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	echo "Installing:$missing" >&2
	$sudo apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
}
