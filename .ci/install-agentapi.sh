#!/usr/bin/env bash
# install-agentapi.sh builds the pinned coder/agentapi (MIT, commit 00ff7ff,
# version 0.12.1) that fleetd's agentapi package and its tests drive: the HTTP
# API over a terminal that is fleetd's second agent runtime beside herdr.
#
# coder/agentapi is not served by the Go module proxy, so it is built from the
# source tarball in ../shared/vendor (build-agentapi.sh; its own modules come
# from the proxy) into ${FLEET_CACHE:-$PWD/.cache}/agentapi. It skips the build
# when the pinned version is already there, and prints the bin dir (the only
# thing on stdout):
#
#   export PATH="$(.ci/install-agentapi.sh):$PATH"
#
# AGENTAPI_VENDOR overrides where the tarball and build script are. Users
# install agentapi from its own releases instead.
set -euo pipefail

version="0.12.1"
vendor="${AGENTAPI_VENDOR:-$PWD/../shared/vendor}"
dir="${FLEET_CACHE:-$PWD/.cache}/agentapi"

installed() {
	[[ -x "$dir/agentapi" ]] && [[ "$("$dir/agentapi" --version 2>/dev/null || true)" == "agentapi version $version" ]]
}

if ! installed; then
	if [[ ! -x "$vendor/build-agentapi.sh" ]]; then
		echo "install-agentapi: no $vendor/build-agentapi.sh (set AGENTAPI_VENDOR to the dir holding it and agentapi-00ff7ff.tar.gz)" >&2
		exit 1
	fi
	echo "install-agentapi: building agentapi $version into $dir" >&2
	rm -f "$dir/agentapi" # build-agentapi.sh keeps any binary that runs, even another version
	"$vendor/build-agentapi.sh" "$dir" >/dev/null
	if ! installed; then
		echo "install-agentapi: $dir/agentapi does not report version $version" >&2
		exit 1
	fi
fi

echo "$dir"
