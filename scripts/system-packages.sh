#!/usr/bin/env bash
# The system packages workbench needs beyond Python, installed with apt-get on Debian/Ubuntu.
# Called by `make test` and `make app` (through `make system`); returns at once when all is there.
#
#   chromium            renders static figure export (kaleido) and drives the browser tests (Playwright)
#   fonts-dejavu-core,  text in exported figures and screenshots (Chromium ships no fonts)
#   fonts-liberation
#   ca-certificates     pip's downloads over HTTPS on a bare machine
#   python3-venv        `python3 -m venv` on Debian (only looked for while .venv does not exist)
#
# Root installs; so does a user whose `sudo` needs no password. Anyone else gets one line naming the
# exact command to run, and the make stops. Where there is no apt-get the packages are named and make
# goes on: figure export then says it has no browser, and the tests that need one skip.
# WORKBENCH_SKIP_SYSTEM=1 goes on without installing anything.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
[ -d /usr/share/fonts/truetype/dejavu ] || missing+=(fonts-dejavu-core)
[ -d /usr/share/fonts/truetype/liberation ] || missing+=(fonts-liberation)
[ -e /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
if [ ! -x .venv/bin/python ] && ! "${PY:-python3}" -c "import ensurepip, venv" >/dev/null 2>&1; then
    missing+=(python3-venv)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ -n "${WORKBENCH_SKIP_SYSTEM:-}" ]; then
    echo "system: not installing ${missing[*]} (WORKBENCH_SKIP_SYSTEM is set)" >&2
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "system: ${missing[*]} missing and this is no Debian/Ubuntu machine: install them with its package manager (until then figure export and the browser tests are skipped)" >&2
    exit 0
fi
install="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
else
    echo "system: missing ${missing[*]}; run: sudo sh -c '$install'   (or WORKBENCH_SKIP_SYSTEM=1 to go on without them)" >&2
    exit 1
fi

echo "== installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
