#!/usr/bin/env bash
# install-gemini.sh installs the pinned Google Gemini CLI that fleetd's
# gemini kind is measured against, for the end-to-end tests that drive it
# against the fake model API (fakeapi speaks Gemini's streamGenerateContent).
#
# It installs into ${FLEET_CACHE:-$PWD/.cache}/gemini, skips the download
# when the pinned version is already there, and prints the bin dir (the
# only thing on stdout):
#
#   export PATH="$(.ci/install-gemini.sh):$PATH"
#
# GEMINI_VERSION overrides the pin. Needs node and npm; the package is one
# bundle (~100 MB with its prebuilt node-pty and keytar): no other download.
set -euo pipefail

version="${GEMINI_VERSION:-0.61.0}"
prefix="${FLEET_CACHE:-$PWD/.cache}/gemini"
bin="$prefix/node_modules/.bin"

installed() {
	[[ -x "$bin/gemini" ]] && [[ "$("$bin/gemini" --version 2>/dev/null || true)" == *"$version"* ]]
}

if ! installed; then
	echo "install-gemini: installing @google/gemini-cli@$version into $prefix" >&2
	mkdir -p "$prefix"
	npm install --no-audit --no-fund --prefix "$prefix" "@google/gemini-cli@$version" >&2
	if ! installed; then
		echo "install-gemini: $bin/gemini does not report version $version" >&2
		exit 1
	fi
fi

echo "$bin"
