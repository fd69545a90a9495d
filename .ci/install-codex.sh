#!/usr/bin/env bash
# install-codex.sh installs the pinned OpenAI Codex CLI that fleetd's codex
# kind is measured against, for the end-to-end tests that drive it against
# the fake model API (fakeapi speaks OpenAI's Responses protocol).
#
# It installs into ${FLEET_CACHE:-$PWD/.cache}/codex, skips the download
# when the pinned version is already there, and prints the bin dir (the
# only thing on stdout):
#
#   export PATH="$(.ci/install-codex.sh):$PATH"
#
# CODEX_VERSION overrides the pin. Needs node and npm; the package carries
# its native binary (~400 MB) as an npm dependency: no other download.
set -euo pipefail

version="${CODEX_VERSION:-0.169.0}"
prefix="${FLEET_CACHE:-$PWD/.cache}/codex"
bin="$prefix/node_modules/.bin"

installed() {
	[[ -x "$bin/codex" ]] && [[ "$("$bin/codex" --version 2>/dev/null || true)" == *" $version"* ]]
}

if ! installed; then
	echo "install-codex: installing @openai/codex@$version into $prefix" >&2
	mkdir -p "$prefix"
	npm install --no-audit --no-fund --prefix "$prefix" "@openai/codex@$version" >&2
	if ! installed; then
		echo "install-codex: $bin/codex does not report version $version" >&2
		exit 1
	fi
fi

echo "$bin"
