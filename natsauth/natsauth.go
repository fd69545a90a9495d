package natsauth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/inbox"
	"github.com/fleetd/fleetd/natsauth/natscreds"
	"github.com/fleetd/fleetd/projections"
)

// Fleet describes who needs credentials: the hosts and, per host, its agents.
type Fleet struct {
	Hosts map[string][]string // host → agent ids
}

// ParseFleet builds a Fleet from hosts and agents written as
// "host:agent-id" (the form of 'fleetd auth --agents'); every agent's host
// must be one of hosts.
func ParseFleet(hosts, agents []string) (Fleet, error) {
	f := Fleet{Hosts: map[string][]string{}}
	for _, h := range hosts {
		f.Hosts[h] = nil
	}
	for _, ha := range agents {
		host, agent, ok := strings.Cut(ha, ":")
		if !ok {
			return f, fmt.Errorf("agent %q: want host:agent-id", ha)
		}
		if _, known := f.Hosts[host]; !known {
			return f, fmt.Errorf("agent %q: host %q is not one of the fleet's hosts", ha, host)
		}
		f.Hosts[host] = append(f.Hosts[host], agent)
	}
	return f, nil
}

// Validate checks every host and agent token; agent ids are unique.
func (f Fleet) Validate() error {
	var errs []error
	seen := map[string]string{}
	if len(f.Hosts) == 0 {
		errs = append(errs, errors.New("no hosts"))
	}
	for h, agents := range f.Hosts {
		if err := events.ValidToken(h); err != nil {
			errs = append(errs, fmt.Errorf("host: %w", err))
		}
		for _, a := range agents {
			if err := events.ValidAgentID(a); err != nil {
				errs = append(errs, err)
			}
			if other, dup := seen[a]; dup {
				errs = append(errs, fmt.Errorf("agent %q is on both %s and %s", a, other, h))
			}
			seen[a] = h
		}
	}
	return errors.Join(errs...)
}

// Identity is one NATS user.
type Identity struct {
	Name      string // "admin", "gateway-<host>", "agent-<id>"
	PublicKey string
	Seed      []byte
	Publish   []string
	Subscribe []string
}

// Credentials is what Generate mints for a fleet: one identity per admin,
// gateway and agent, and the secret cluster members authenticate their
// routes with (a route is a server, unrestricted by any user's
// permissions, so its secret is as strong as the admin's key).
type Credentials struct {
	Identities []Identity
	// RouteUser and RoutePassword go into server.conf's cluster
	// authorization; each member presents them on the routes it dials.
	RouteUser, RoutePassword string
}

// Identity returns the identity named name.
func (c Credentials) Identity(name string) (Identity, bool) {
	i := slices.IndexFunc(c.Identities, func(id Identity) bool { return id.Name == name })
	if i < 0 {
		return Identity{}, false
	}
	return c.Identities[i], true
}

// Names of the identities Generate mints, and the directory layout Write
// uses: admin and gateway keys beside server.conf, agent keys in their own
// subdirectory, so a pane pointed at its key is never pointed at the
// directory of keys that may do more.
const (
	AdminName     = natscreds.AdminName
	GatewayPrefix = natscreds.GatewayPrefix
	AgentPrefix   = natscreds.AgentPrefix
	// AgentsDir is the subdirectory of agent keys.
	AgentsDir = "agents"
	// ServerConfigFile is the nats-server configuration Write puts in dir.
	ServerConfigFile = "server.conf"
	keyExt           = natscreds.KeyExt
)

// GatewayName and AgentName are the identity names of a host's gateway and
// of an agent.
func GatewayName(host string) string { return GatewayPrefix + host }

// AgentName is the identity name of agent.
func AgentName(agent string) string { return AgentPrefix + agent }

// InboxPrefix is the inbox prefix an identity's connections must use
// (natscreds.InboxPrefix).
func InboxPrefix(name string) string { return natscreds.InboxPrefix(name) }

// HookKinds are the event kinds an agent's own hooks write (claudehook),
// and all an agent's credentials may publish. registered, queued, typed,
// exited, deferred and attention come from the gateway that owns the pane
// (or the shim and router): an agent writing them could point its turns at
// another agent's pane.
var HookKinds = []string{"submitted", "replied", "usage", "failed", "session", "status"}

// AdminPermissions: everything. The admin provisions the fabric (the FLEET
// stream, the KV buckets, the router's durable consumers) and is the only
// identity that may change or delete them.
func AdminPermissions() (pub, sub []string) {
	return []string{">"}, []string{">"}
}

// AgentPermissions: its own hook events, the one roster row its hook reads
// (by direct get of that key, nothing else of the bucket), its own fleet
// inbox (info, next and ack on its durable consumer inbox-<agent>, which
// the gateway creates: so `nats consumer next FLEET inbox-<agent>` works
// with its key, and no other agent's inbox does), and replies on its own
// inbox prefix.
func AgentPermissions(agent string) (pub, sub []string) {
	for _, k := range HookKinds {
		pub = append(pub, "fleet.agent."+agent+"."+k)
	}
	pub = append(pub, projections.RosterGetSubject(agent))
	cons := inbox.ConsumerName(agent)
	pub = append(pub,
		"$JS.API.CONSUMER.INFO."+events.Stream+"."+cons,
		"$JS.API.CONSUMER.MSG.NEXT."+events.Stream+"."+cons,
		"$JS.ACK."+events.Stream+"."+cons+".>")
	return pub, []string{InboxPrefix(AgentName(agent)) + ".>"}
}

// GatewayPermissions: its host's events, every event kind of its own
// agents, queued, failed and released for any agent (its shim and router
// write those for turns on other hosts), role queues and job events; the JetStream API
// calls it runs on — stream info and message gets, consumers on FLEET and
// the buckets' streams (ordered readers and the router's durables: create,
// info, next, ack, delete), KV reads and puts — and never a stream's
// create, update, purge or delete, or a message delete; the micro service
// (fleetd.*, $SRV.*), answering requesters on the default inbox; and its
// own inbox prefix.
func GatewayPermissions(host string, agents []string) (pub, sub []string) {
	pub = []string{
		"fleet.host." + host + ".>",
		"fleet.agent.*.queued",
		"fleet.agent.*.failed",
		// Releases of role turns assigned to agents of a stale host: any
		// router of the fleet may give them back to their roles.
		"fleet.agent.*.released",
		// Inbox messages, for agents of any host and for leads outside
		// the fleet (its shim posts them, its notifier reports turns).
		"fleet.agent.*." + inbox.Kind,
		// How far an inbox is acknowledged, kept beside it.
		"fleet.agent.*." + inbox.ReadKind,
		"fleet.role.>",
		"fleet.job.>",
	}
	for _, a := range agents {
		pub = append(pub, "fleet.agent."+a+".>")
	}
	pub = append(pub, "$JS.API.INFO")
	pub = append(pub, streamReader(events.Stream)...)
	pub = append(pub, "$JS.ACK."+events.Stream+".>")
	// The projection's KV buckets (DESIGN.md's read models), whose
	// streams are KV_<bucket>.
	for _, b := range projections.Buckets() {
		pub = append(pub, "$KV."+b+".>")
		pub = append(pub, streamReader("KV_"+b)...)
	}
	// Answers to micro requests ($SRV pings, fleetd.*) from clients on the
	// default inbox: the admin and token-less local tools. Agents' and
	// other gateways' inboxes have prefixes of their own, out of reach.
	pub = append(pub, "_INBOX.>")
	sub = []string{InboxPrefix(GatewayName(host)) + ".>", "$SRV.>", "fleetd.>"}
	return pub, sub
}

// streamReader is what reading a stream takes: its info, message gets
// (leader and direct), and consumers (create in both subject forms, info,
// next, delete).
func streamReader(stream string) []string {
	api := "$JS.API."
	return []string{
		api + "STREAM.INFO." + stream,
		api + "STREAM.MSG.GET." + stream,
		api + "DIRECT.GET." + stream,
		api + "DIRECT.GET." + stream + ".>",
		api + "CONSUMER.CREATE." + stream + ".>",
		api + "CONSUMER.INFO." + stream + ".*",
		api + "CONSUMER.MSG.NEXT." + stream + ".*",
		api + "CONSUMER.DELETE." + stream + ".*",
	}
}

// Generate mints an identity for the admin, every gateway and every agent,
// and a route secret.
func Generate(f Fleet) (Credentials, error) {
	if err := f.Validate(); err != nil {
		return Credentials{}, err
	}
	var c Credentials
	add := func(name string, pub, sub []string) error {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return fmt.Errorf("nkey for %s: %w", name, err)
		}
		pk, _ := kp.PublicKey()
		seed, _ := kp.Seed()
		c.Identities = append(c.Identities, Identity{Name: name, PublicKey: pk, Seed: seed, Publish: pub, Subscribe: sub})
		return nil
	}
	pub, sub := AdminPermissions()
	if err := add(AdminName, pub, sub); err != nil {
		return Credentials{}, err
	}
	hosts := make([]string, 0, len(f.Hosts))
	for h := range f.Hosts {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		agents := slices.Sorted(slices.Values(f.Hosts[h]))
		pub, sub := GatewayPermissions(h, agents)
		if err := add(GatewayName(h), pub, sub); err != nil {
			return Credentials{}, err
		}
		for _, a := range agents {
			pub, sub := AgentPermissions(a)
			if err := add(AgentName(a), pub, sub); err != nil {
				return Credentials{}, err
			}
		}
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Credentials{}, fmt.Errorf("route secret: %w", err)
	}
	c.RouteUser, c.RoutePassword = "fleetd-route", base64.RawURLEncoding.EncodeToString(secret)
	return c, nil
}

// ServerConfig renders the nats-server authorization for c: one nkey user
// per identity with its subject permissions, and the cluster routes'
// authorization.
func ServerConfig(c Credentials) string {
	var b strings.Builder
	b.WriteString("# Generated by `fleetd auth`: one nkey user per admin, gateway and agent,\n")
	b.WriteString("# and the secret cluster routes authenticate with. Keep it mode 0600.\n")
	b.WriteString("authorization {\n  users = [\n")
	for _, id := range c.Identities {
		fmt.Fprintf(&b, "    # %s\n    { nkey: %q, permissions: { publish: { allow: %s }, subscribe: { allow: %s } } }\n",
			id.Name, id.PublicKey, list(id.Publish), list(id.Subscribe))
	}
	b.WriteString("  ]\n}\n")
	if c.RouteUser != "" {
		fmt.Fprintf(&b, "cluster {\n  authorization { user: %q, password: %q }\n}\n", c.RouteUser, c.RoutePassword)
	}
	return b.String()
}

func list(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// KeyPath is where Write puts identity name's seed file under dir: agents
// in dir/agents, the admin and gateways in dir itself.
func KeyPath(dir, name string) string {
	if strings.HasPrefix(name, AgentPrefix) {
		return filepath.Join(dir, AgentsDir, name+keyExt)
	}
	return filepath.Join(dir, name+keyExt)
}

// Write puts server.conf and one seed file per identity into dir (agents'
// in dir/agents), every file mode 0600 whatever was there before, and
// removes key files a previous run left for identities c no longer has
// (their keys are no longer in server.conf). Directories it creates are
// mode 0700.
func Write(dir string, c Credentials) error {
	if err := os.MkdirAll(filepath.Join(dir, AgentsDir), 0o700); err != nil {
		return fmt.Errorf("credentials dir: %w", err)
	}
	if err := writePrivate(filepath.Join(dir, ServerConfigFile), []byte(ServerConfig(c))); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, id := range c.Identities {
		p := KeyPath(dir, id.Name)
		keep[p] = true
		if err := writePrivate(p, append(id.Seed, '\n')); err != nil {
			return err
		}
	}
	return removeStale(dir, keep)
}

// writePrivate replaces path with data, mode 0600: a fresh file renamed
// over the old one, so an old file's wider mode does not survive.
func writePrivate(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, 0o600)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// removeStale deletes gateway and agent key files in dir and dir/agents
// that keep does not list, including agent keys of the old flat layout.
func removeStale(dir string, keep map[string]bool) error {
	var errs []error
	for _, pattern := range []string{
		filepath.Join(dir, GatewayPrefix+"*"+keyExt),
		filepath.Join(dir, AgentPrefix+"*"+keyExt),
		filepath.Join(dir, AgentsDir, AgentPrefix+"*"+keyExt),
	} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if !keep[m] {
				if err := os.Remove(m); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, fmt.Errorf("remove stale key: %w", err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// IdentityName is the identity a key file from Write belongs to
// (natscreds.IdentityName).
func IdentityName(path string) string { return natscreds.IdentityName(path) }

// AgentCreds is the key file of agent that Write put beside an admin's or
// gateway's (…/gateway-<host>.nk → …/agents/agent-<agent>.nk), or "" when
// creds is not such a file or the agent has none there. A gateway gives
// its panes this, never its own file.
func AgentCreds(creds, agent string) string {
	name := IdentityName(creds)
	if name == "" || strings.HasPrefix(name, AgentPrefix) || events.ValidAgentID(agent) != nil {
		return ""
	}
	p := KeyPath(filepath.Dir(creds), AgentName(agent))
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// ConnectOption returns the nats.Option for a credentials file: an nkey
// seed file (from Write) or a JWT .creds file. For a gateway's or an
// agent's key from Write it also sets the identity's inbox prefix, the
// only inbox its permissions let it subscribe to. (The hook, which links
// no nats.go, reads the same files with natscreds.Load.)
func ConnectOption(path string) (nats.Option, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	if !natscreds.IsSeedFile(b) {
		return nats.UserCredentials(path), nil
	}
	seed, err := nats.NkeyOptionFromSeed(path)
	if err != nil {
		return nil, fmt.Errorf("credentials %s: %w", path, err)
	}
	prefix := InboxPrefix(IdentityName(path))
	return func(o *nats.Options) error {
		if err := seed(o); err != nil {
			return err
		}
		if prefix == "" {
			return nil
		}
		return nats.CustomInboxPrefix(prefix)(o)
	}, nil
}

// ClientOptions is how a fleetd client authenticates to NATS: with
// credentials (an nkey from fleetd auth, which also sets its inbox
// prefix, or a JWT .creds file), else with the token, else not at all.
func ClientOptions(creds, token string) ([]nats.Option, error) {
	switch {
	case creds != "":
		o, err := ConnectOption(creds)
		if err != nil {
			return nil, err
		}
		return []nats.Option{o}, nil
	case token != "":
		return []nats.Option{nats.Token(token)}, nil
	}
	return nil, nil
}
