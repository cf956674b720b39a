#!/usr/bin/env bash
# Install the system packages the tests and the demo need, only those missing (Debian/Ubuntu, as root).
# Usage: scripts/system_deps.sh [--bootstrap | --demo]
#   --bootstrap: only what `make` itself needs (for .ci/run); --demo: what `make demo` needs (a real Alertmanager, Java
#   17 for ansible-rulebook's rule engine, python3-venv). As a normal user nothing is installed: the missing packages
#   are named with the apt-get line to run, and the exit status is 1.
set -euo pipefail

# command -> Debian package.
declare -A NEEDED=(
    [git]=git
    [make]=make
    [sha256sum]=coreutils
)
if [ "${1:-}" = "--demo" ]; then
    NEEDED+=(
        [prometheus-alertmanager]=prometheus-alertmanager
        [java]=openjdk-17-jre-headless
    )
elif [ "${1:-}" != "--bootstrap" ]; then
    NEEDED+=(
        # ansible-test's "shellcheck" sanity test checks scripts/ and .ci/.
        [shellcheck]=shellcheck
        # Certify: the HTML report is opened in headless Chromium (tests/integration/test_certify_report_browser.py)
        [chromium]=chromium
        # Certify: the multi-host network-namespace fabric (sshd per host, OpenMPI over TCP, tc tbf slow links)
        [sshd]=openssh-server
        [ssh]=openssh-client
        [mpirun]=openmpi-bin
        [mpicc]=libopenmpi-dev
        [gcc]=gcc
        [ip]=iproute2
        [tc]=iproute2
        # Configure: a real OCI registry for bundle_publish (tests/harness/oci_registry.py starts
        # `docker-registry serve` itself on 127.0.0.1; the package's systemd service is not needed)
        [docker-registry]=docker-registry
        # Operate: a real Alertmanager in front of the EDA source (tests/harness/alertmanager_process.py starts
        # the binary itself on 127.0.0.1; the package's systemd service is not needed)
        [prometheus-alertmanager]=prometheus-alertmanager
        # Operate: promtool checks and unit-tests the GPU alert rules (tests/unit/test_alert_rules.py); the
        # package's prometheus service is not needed
        [promtool]=prometheus
        # Operate: ansible-rulebook's rule engine (drools_jpy) needs a Java 17+ runtime
        [java]=openjdk-17-jre-headless
    )
fi
missing=()
for cmd in "${!NEEDED[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || missing+=("${NEEDED[$cmd]}")
done
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
[ "${#missing[@]}" -eq 0 ] && exit 0
mapfile -t unique < <(printf '%s\n' "${missing[@]}" | sort -u)
if [ "$EUID" -ne 0 ]; then
    echo "missing system packages: ${unique[*]}; install them as root: sudo apt-get install -y ${unique[*]}" >&2
    echo "(or run this make target as root: scripts/system_deps.sh installs them itself)" >&2
    exit 1
fi
echo "installing system packages: ${unique[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${unique[@]}" </dev/null
