#!/usr/bin/env bash
# install-claude.sh installs the pinned Claude Code CLI that fleetd's end-to-end
# tests and `fleetd demo` drive against the fake Anthropic API (fakeapi).
#
# It installs into ${FLEET_CACHE:-$PWD/.cache}/claude-code, skips the download
# when the pinned version is already there, and prints the bin dir (the only
# thing on stdout) so callers can put it on PATH:
#
#   export PATH="$(.ci/install-claude.sh):$PATH"        # a shell
#   .ci/install-claude.sh >> "$GITHUB_PATH"             # GitHub Actions
#
# CLAUDE_CODE_VERSION overrides the pin. Needs node and npm; the package is a
# ~370 MB native binary (it warns about node < 22 and runs fine on 20).
set -euo pipefail

version="${CLAUDE_CODE_VERSION:-2.1.328}"
prefix="${FLEET_CACHE:-$PWD/.cache}/claude-code"
bin="$prefix/node_modules/.bin"
pkg="$prefix/node_modules/@anthropic-ai/claude-code"

installed() {
	[[ -x "$bin/claude" ]] && [[ "$("$bin/claude" --version 2>/dev/null || true)" == "$version "* ]]
}

if ! installed; then
	echo "install-claude: installing @anthropic-ai/claude-code@$version into $prefix" >&2
	mkdir -p "$prefix"
	npm install --no-audit --no-fund --prefix "$prefix" "@anthropic-ai/claude-code@$version" >&2
	# The postinstall swaps the bin/claude.exe placeholder for the native
	# binary; npm versions that hold back install scripts leave it undone.
	if ! installed && [[ -f "$pkg/install.cjs" ]]; then
		(cd "$pkg" && node install.cjs) >&2
	fi
	if ! installed; then
		echo "install-claude: $bin/claude does not report version $version" >&2
		exit 1
	fi
fi

echo "$bin"
