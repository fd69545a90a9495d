package embeddednats_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
)

// A listener other machines can reach never runs without authentication:
// the server refuses to start, and says which listener.
func TestAListenerOffLoopbackNeedsAuthentication(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "users.conf")
	writeFile(t, conf, `authorization { users = [ { user: "u", password: "p" } ] }`)
	anon := filepath.Join(t.TempDir(), "anon.conf")
	writeFile(t, anon, `authorization { users = [ { user: "u", password: "p" } ] }
no_auth_user: "u"`)
	port := natstest.FreePorts(t, 1)[0]
	for _, tc := range []struct {
		name   string
		cfg    embeddednats.Config
		refuse string // the listener named, "" when it must start
	}{
		{"all interfaces, no auth", embeddednats.Config{Listen: "0.0.0.0:0"}, "client listener 0.0.0.0"},
		{"empty host, no auth", embeddednats.Config{Listen: ":0"}, "client listener :"},
		{"IPv6 everywhere, no auth", embeddednats.Config{Listen: "[::]:0"}, "client listener [::]:0"},
		{"a config letting anyone in as a user", embeddednats.Config{Listen: "0.0.0.0:0", ConfigFile: anon}, "client listener"},
		{"cluster routes everywhere, no auth", embeddednats.Config{ClusterName: "c", ClusterListen: fmt.Sprintf("0.0.0.0:%d", port)}, "cluster listener 0.0.0.0"},
		{"cluster routes everywhere, users but no route auth", embeddednats.Config{Listen: "0.0.0.0:0", ConfigFile: conf, Token: "T",
			ClusterName: "c", ClusterListen: fmt.Sprintf("0.0.0.0:%d", port)}, "cluster listener 0.0.0.0"},
		{"loopback, no auth", embeddednats.Config{Listen: "127.0.0.1:0"}, ""},
		{"localhost, no auth", embeddednats.Config{Listen: "localhost:0"}, ""},
		{"all interfaces with a token", embeddednats.Config{Listen: "0.0.0.0:0", Token: "T"}, ""},
		{"all interfaces with users", embeddednats.Config{Listen: "0.0.0.0:0", ConfigFile: conf}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.DataDir, cfg.ServerName, cfg.ReadyTimeout = t.TempDir(), "test", 5*time.Second
			srv, err := embeddednats.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = srv.Start(context.Background())
			t.Cleanup(srv.Close)
			switch {
			case tc.refuse == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refuse != "" && (!errors.Is(err, embeddednats.ErrUnauthenticated) || !strings.Contains(err.Error(), tc.refuse)):
				t.Errorf("got %v, want ErrUnauthenticated naming %q", err, tc.refuse)
			}
		})
	}
}

// With a token, every client must present it, the in-process one too.
func TestTheTokenIsRequiredOfEveryClient(t *testing.T) {
	srv := natstest.Start(t, natstest.WithClientOptions(nats.Token("T")), natstest.WithConfig(func(c *embeddednats.Config) {
		c.Listen, c.Token = "0.0.0.0:0", "T"
	}))
	url := srv.ClientURL()
	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Error("connected without the token")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("without the token: %v", err)
	}
	if nc, err := nats.Connect(url, nats.Token("wrong")); err == nil {
		nc.Close()
		t.Error("connected with a wrong token")
	}
	if nc, err := srv.Connect(); err == nil {
		nc.Close()
		t.Error("connected in-process without the token")
	}
	nc, err := nats.Connect(url, nats.Token("T"))
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	nc.Close()
}

// A cluster whose routes listen everywhere authenticates them with the
// token: members that know it form the cluster (the route URLs carry no
// credentials; the server adds them), and a stranger dialling the route
// port is turned away.
func TestClusterRoutesAuthenticateWithTheToken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	servers := natstest.StartCluster(t, 3, natstest.WithConfig(func(c *embeddednats.Config) {
		c.Token = "T"
		c.ClusterListen = strings.Replace(c.ClusterListen, "127.0.0.1", "0.0.0.0", 1)
	}), natstest.WithClientOptions(nats.Token("T")))
	addr := strings.TrimPrefix(servers[0].ClusterURL(), "nats://")
	conn, err := net.DialTimeout("tcp", strings.Replace(addr, "0.0.0.0", "127.0.0.1", 1), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	info, err := r.ReadString('\n')
	if err != nil || !strings.Contains(info, `"auth_required":true`) {
		t.Fatalf("route INFO %q, %v: want auth_required", info, err)
	}
	fmt.Fprintf(conn, "CONNECT {\"verbose\":false,\"cluster\":\"fleet-test\",\"name\":\"stranger\"}\r\nPING\r\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stranger's route was neither refused nor accepted: %v", err)
		}
		if strings.HasPrefix(line, "-ERR") && strings.Contains(line, "Authorization Violation") {
			break
		}
		if strings.HasPrefix(line, "PONG") {
			t.Fatal("a route without credentials was accepted")
		}
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
