package embeddednats

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"

	"github.com/nats-io/nats-server/v2/server"
)

// RouteUser is the user cluster routes present when Config.Token
// authenticates them.
const RouteUser = "fleetd"

// applyAuth turns Config.Token into nats-server authentication, fills the
// route URLs with the route credentials, and refuses a listener other
// machines can reach without authentication.
//
// The token authenticates clients unless the config file has client auth
// of its own (users, nkeys, an operator), and routes only when it also
// authenticates clients: a token that holders of the lead shim's token
// know must not let them join the cluster as a server when the config
// file restricts every client.
func (s *Server) applyAuth(opts *server.Options) error {
	fileClientAuth := clientAuth(opts)
	if s.cfg.Token != "" && !fileClientAuth {
		opts.Authorization = s.cfg.Token
	}
	if s.cfg.Clustered() {
		if s.cfg.Token != "" && !fileClientAuth && !routeAuth(opts) {
			opts.Cluster.Username, opts.Cluster.Password = RouteUser, s.cfg.Token
		}
		if opts.Cluster.Username != "" {
			for _, r := range opts.Routes {
				if r.User == nil {
					r.User = url.UserPassword(opts.Cluster.Username, opts.Cluster.Password)
				}
			}
		}
	}
	if !opts.DontListen && !loopback(opts.Host) && !clientAuth(opts) {
		return fmt.Errorf("client listener %s: %w", s.cfg.Listen, ErrUnauthenticated)
	}
	if s.cfg.Clustered() && !loopback(opts.Cluster.Host) && !routeAuth(opts) {
		return fmt.Errorf("cluster listener %s: %w", s.cfg.ClusterListen, ErrUnauthenticated)
	}
	return nil
}

// clientAuth reports whether every client must authenticate. A
// no_auth_user lets anyone in as that user, so it counts as none; TLS
// with verified client certificates counts.
func clientAuth(o *server.Options) bool {
	if o.NoAuthUser != "" {
		return false
	}
	return o.Authorization != "" || o.Username != "" || len(o.Users) > 0 || len(o.Nkeys) > 0 ||
		len(o.TrustedOperators) > 0 || len(o.TrustedKeys) > 0 || o.AuthCallout != nil ||
		o.CustomClientAuthentication != nil || o.TLSVerify
}

// routeAuth reports whether routes must authenticate: a route user, or
// TLS with verified client certificates.
func routeAuth(o *server.Options) bool {
	if o.Cluster.Username != "" || o.CustomRouterAuthentication != nil {
		return true
	}
	return o.Cluster.TLSConfig != nil && o.Cluster.TLSConfig.ClientAuth == tls.RequireAndVerifyClientCert
}

// loopback reports whether host (a listen address's host) accepts only
// connections from this machine. Empty and unspecified hosts listen
// everywhere; a name other than localhost may resolve anywhere.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
