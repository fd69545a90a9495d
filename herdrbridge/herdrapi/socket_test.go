package herdrapi

import "testing"

func TestSocketPath(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"explicit socket path wins", map[string]string{"HERDR_SOCKET_PATH": "/run/h.sock", "HERDR_SESSION": "x", "XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/run/h.sock"},
		{"session under XDG config", map[string]string{"HERDR_SESSION": "work", "XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/herdr/sessions/work/herdr.sock"},
		{"session under HOME config", map[string]string{"HERDR_SESSION": "work", "HOME": "/h"}, "/h/.config/herdr/sessions/work/herdr.sock"},
		{"default session is the plain socket", map[string]string{"HERDR_SESSION": "default", "HOME": "/h"}, "/h/.config/herdr/herdr.sock"},
		{"XDG config without session", map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/herdr/herdr.sock"},
		{"HOME only", map[string]string{"HOME": "/h"}, "/h/.config/herdr/herdr.sock"},
		{"empty variables count as unset", map[string]string{"HERDR_SOCKET_PATH": "", "XDG_CONFIG_HOME": "", "HOME": "/h"}, "/h/.config/herdr/herdr.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SocketPath(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("SocketPath = %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("no home is an error", func(t *testing.T) {
		if _, err := SocketPath(func(string) string { return "" }); err == nil {
			t.Error("SocketPath with an empty environment succeeded, want an error")
		}
	})
}
