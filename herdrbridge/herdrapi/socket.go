package herdrapi

import (
	"errors"
	"path/filepath"
)

// SocketPath resolves herdr's socket path exactly as the herdr server does,
// so fleetd finds the same socket a herdr started in the same environment
// listens on:
//
//  1. HERDR_SOCKET_PATH, verbatim;
//  2. HERDR_SESSION=NAME (NAME not "default") → $CFG/sessions/NAME/herdr.sock;
//  3. otherwise $CFG/herdr.sock,
//
// where $CFG is $XDG_CONFIG_HOME/herdr, or $HOME/.config/herdr when
// XDG_CONFIG_HOME is unset (on macOS too). getenv is injected (os.Getenv in
// production) so the rule can be tested without touching the process env.
// Empty variables count as unset.
func SocketPath(getenv func(string) string) (string, error) {
	if p := getenv("HERDR_SOCKET_PATH"); p != "" {
		return p, nil
	}
	cfg := ""
	switch {
	case getenv("XDG_CONFIG_HOME") != "":
		cfg = filepath.Join(getenv("XDG_CONFIG_HOME"), "herdr")
	case getenv("HOME") != "":
		cfg = filepath.Join(getenv("HOME"), ".config", "herdr")
	default:
		return "", errors.New("herdr socket path: none of HERDR_SOCKET_PATH, XDG_CONFIG_HOME, HOME is set")
	}
	if s := getenv("HERDR_SESSION"); s != "" && s != "default" {
		return filepath.Join(cfg, "sessions", s, "herdr.sock"), nil
	}
	return filepath.Join(cfg, "herdr.sock"), nil
}
