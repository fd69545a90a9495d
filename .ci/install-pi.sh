#!/usr/bin/env bash
# install-pi.sh installs the pinned Pi coding agent (@mariozechner/pi-coding-agent)
# that fleetd's pi kind is measured against, for the end-to-end tests that
# drive it against the fake model API (fakeapi speaks Anthropic Messages,
# which Pi's "anthropic-messages" providers send).
#
# It installs into ${FLEET_CACHE:-$PWD/.cache}/pi, skips the download when
# the pinned version is already there, and prints the bin dir (the only
# thing on stdout):
#
#   export PATH="$(.ci/install-pi.sh):$PATH"
#
# PI_VERSION overrides the pin. Needs node and npm (~200 MB, 188 packages;
# their install scripts work offline). Pi would download fd and ripgrep at
# its first start: fleetd launches it with PI_OFFLINE=1, so it never does.
set -euo pipefail

version="${PI_VERSION:-0.73.1}"
prefix="${FLEET_CACHE:-$PWD/.cache}/pi"
bin="$prefix/node_modules/.bin"

installed() {
	# Pi prints its version on stderr.
	[[ -x "$bin/pi" ]] && [[ "$(PI_OFFLINE=1 "$bin/pi" --version 2>&1 || true)" == *"$version"* ]]
}

if ! installed; then
	echo "install-pi: installing @mariozechner/pi-coding-agent@$version into $prefix" >&2
	mkdir -p "$prefix"
	npm install --no-audit --no-fund --prefix "$prefix" "@mariozechner/pi-coding-agent@$version" >&2
	if ! installed; then
		echo "install-pi: $bin/pi does not report version $version" >&2
		exit 1
	fi
fi

echo "$bin"
