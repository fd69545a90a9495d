package leadshim_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

func TestNonLoopbackWithoutATokenIsRefused(t *testing.T) {
	f := fleettest.New(t)
	for _, tc := range []struct {
		addr, token string
		err         error
	}{
		{"0.0.0.0:8765", "", leadshim.ErrInsecure},
		{":8765", "", leadshim.ErrInsecure},
		{"192.0.2.7:8765", "", leadshim.ErrInsecure},
		{"0.0.0.0:8765", "s3cret", nil},
		{"127.0.0.1:8765", "", nil},
		{"[::1]:8765", "", nil},
		{"localhost:8765", "", nil},
		{"no-port", "", leadshim.ErrConfig},
	} {
		_, err := leadshim.New(leadshim.Config{Addr: tc.addr, Token: tc.token, Log: f.Log, Views: f.Views})
		if (tc.err == nil) != (err == nil) || (tc.err != nil && !errors.Is(err, tc.err)) {
			t.Errorf("New(%q, token %q) = %v, want %v", tc.addr, tc.token, err, tc.err)
		}
	}
}

func TestBearerTokenIsRequiredExceptForHealth(t *testing.T) {
	f := fleettest.New(t)
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Addr, c.Token = "0.0.0.0:0", "s3cret" })
	for _, tc := range []struct {
		path, auth string
		status     int
	}{
		{"/roster", "", http.StatusUnauthorized},
		{"/roster", "Bearer wrong", http.StatusUnauthorized},
		{"/roster", "s3cret", http.StatusUnauthorized},
		{"/roster", "Bearer s3cret", http.StatusOK},
		// The scheme is case-insensitive (RFC 7235); the token is not.
		{"/roster", "bearer s3cret", http.StatusOK},
		{"/roster", "BEARER s3cret", http.StatusOK},
		{"/roster", "Bearer  s3cret", http.StatusOK},
		{"/roster", "bearer S3CRET", http.StatusUnauthorized},
		{"/roster", "Basic s3cret", http.StatusUnauthorized},
		{"/roster", "Bearers3cret", http.StatusUnauthorized},
		{"/roster", "Bearer s3cret extra", http.StatusUnauthorized},
		{"/message/01JF6Z0000000000000000000A", "", http.StatusUnauthorized},
		{"/metrics", "", http.StatusUnauthorized},
		{"/healthz", "", http.StatusOK},
	} {
		var hdr []string
		if tc.auth != "" {
			hdr = []string{"Authorization", tc.auth}
		}
		status, body := fleettest.Do(t, http.MethodGet, base+tc.path, "", hdr...)
		if status != tc.status {
			t.Errorf("GET %s with %q: %d, want %d: %s", tc.path, tc.auth, status, tc.status, body)
		}
		if status == http.StatusUnauthorized {
			if e := errorOf(t, body); e.Code != "unauthorized" {
				t.Errorf("401 code %q", e.Code)
			}
		}
	}
	status, body := fleettest.Do(t, http.MethodPost, base+"/message", `{"to":"w1","text":"x"}`)
	if status != http.StatusUnauthorized {
		t.Errorf("POST without token: %d %s", status, body)
	}
}
