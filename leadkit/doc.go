// Package leadkit is what a Claude Code lead needs in its project to
// delegate through fleetd: the team charter section of its CLAUDE.md
// (between markers, so writing it again replaces it) and the /delegate
// slash command. fleetd init lead writes them. It imports only leadshim
// (for the role rows a running fleetd reports).
package leadkit
