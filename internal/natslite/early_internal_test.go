package natslite

import "testing"

// CONNECT goes before the INFO only when nothing secret can leak: never
// with a nonce to sign, and with a token or password only on loopback.
func TestEarlyConnectOnlyWhenNothingSecretCanLeak(t *testing.T) {
	sign := func([]byte) ([]byte, error) { return nil, nil }
	for _, c := range []struct {
		name     string
		o        Options
		loopback bool
		want     bool
	}{
		{"not pipelined", Options{}, true, false},
		{"no secret, remote", Options{Pipelined: true}, false, true},
		{"token, loopback", Options{Pipelined: true, Token: "t"}, true, true},
		{"token, remote", Options{Pipelined: true, Token: "t"}, false, false},
		{"password, remote", Options{Pipelined: true, User: "u", Password: "p"}, false, false},
		{"nkey, loopback", Options{Pipelined: true, NKey: "U", Sign: sign}, true, false},
	} {
		if got := c.o.early(func() bool { return c.loopback }); got != c.want {
			t.Errorf("%s: early = %v, want %v", c.name, got, c.want)
		}
	}
}
