package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --tls-cert and --tls-key go together and must load as a pair before
// anything starts; with them the shim's URL, as the banner and the panes
// get it, is https://.
func TestTheShimsTLSFlagsAreCheckedAndMakeItsURLHTTPS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	base := Config{Host: "h1", NATS: Config{}.NATS}
	base.NATS.DataDir = dir
	for _, c := range []struct {
		name, cert, key, want string
	}{
		{"a certificate without its key", cert, "", "go together"},
		{"a key without its certificate", "", keyFile, "go together"},
		{"the key as the certificate", keyFile, keyFile, "--tls-cert/--tls-key"},
		{"a pair", cert, keyFile, ""},
	} {
		cfg := base
		cfg.TLSCert, cfg.TLSKey = c.cert, c.key
		cfg.setDefaults()
		err := cfg.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	g := &Gateway{cfg: Config{TLSCert: cert, TLSKey: keyFile}, httpAddr: "127.0.0.1:8765"}
	if got := g.ShimURL(); got != "https://127.0.0.1:8765" {
		t.Errorf("ShimURL with TLS = %q", got)
	}
	if got := (&Gateway{httpAddr: "127.0.0.1:8765"}).ShimURL(); got != "http://127.0.0.1:8765" {
		t.Errorf("ShimURL without = %q", got)
	}
}
