#!/usr/bin/env bash
# install-opencode.sh installs the pinned OpenCode CLI that fleetd's
# opencode kind is measured against, for the end-to-end tests that drive it
# against the fake model API (OpenCode speaks Anthropic Messages to it
# through @ai-sdk/anthropic).
#
# It installs into ${FLEET_CACHE:-$PWD/.cache}/opencode, skips the download
# when the pinned version is already there, and prints the bin dir (the
# only thing on stdout):
#
#   export PATH="$(.ci/install-opencode.sh):$PATH"
#
# OPENCODE_VERSION overrides the pin. Needs node and npm; the package
# carries its Bun-compiled binary (~185 MB) as an npm optional dependency,
# which its postinstall links: no other download. (At run time OpenCode
# would npm-install @opencode-ai/plugin into each config dir; fleetd
# pre-seeds the agent's config dir so that it does not.)
set -euo pipefail

version="${OPENCODE_VERSION:-1.18.33}"
prefix="${FLEET_CACHE:-$PWD/.cache}/opencode"
bin="$prefix/node_modules/.bin"

installed() {
	[[ -x "$bin/opencode" ]] && [[ "$("$bin/opencode" --version 2>/dev/null || true)" == *"$version"* ]]
}

if ! installed; then
	echo "install-opencode: installing opencode-ai@$version into $prefix" >&2
	mkdir -p "$prefix"
	npm install --no-audit --no-fund --prefix "$prefix" "opencode-ai@$version" >&2
	if ! installed; then
		echo "install-opencode: $bin/opencode does not report version $version" >&2
		exit 1
	fi
fi

echo "$bin"
