package leadshim

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
)

// CSRFHeader carries the dashboard page's CSRF token on an action it
// sends (and, on the shim's way in to the dashboard, the token the page
// is to carry: package dashboard reads it under the same name). A signed-
// in browser's action without it is refused 403 csrf: a page of another
// site can make the browser send the cookie, never read the token.
const CSRFHeader = "X-Fleetd-Csrf"

// cookieActions are the doors a sign-in cookie opens beyond reads, with
// the page's CSRF token: the dashboard's actions — send, spawn, stop,
// restart, cancel a turn, answer a dialog. Inboxes, jobs and context stay
// the bearer token's.
func cookieAction(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(p) == 1:
		return p[0] == "message" || p[0] == "agents"
	case len(p) == 3 && p[0] == "message":
		return p[2] == "cancel"
	case len(p) == 3 && p[0] == "agents":
		return p[2] == "stop" || p[2] == "restart" || p[2] == "answer"
	}
	return false
}

// cookieMay reports whether a sign-in cookie may stand for the token on
// r: on reads, and on the dashboard's actions (whose CSRF token csrf
// checks next).
func cookieMay(r *http.Request) bool { return readOnly(r) || cookieAction(r) }

// csrfKey keys the CSRF tokens: the bearer token when there is one (a new
// token, like a restart, voids every page's), else a secret of this
// process's own.
func (s *Server) csrfKey() []byte {
	if s.cfg.Token != "" {
		return []byte(s.cfg.Token)
	}
	s.csrfOnce.Do(func() {
		s.csrfSecret = make([]byte, 32)
		_, _ = rand.Read(s.csrfSecret) // never fails (crypto/rand)
	})
	return s.csrfSecret
}

// csrfToken is the CSRF token of the sign-in id ("" without a token):
// an HMAC, so it is bound to the sign-in and needs no table of its own.
func (s *Server) csrfToken(signIn string) string {
	m := hmac.New(sha256.New, s.csrfKey())
	m.Write([]byte("fleetd dashboard csrf\x00" + signIn))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// pageCSRF is the CSRF token a page served to r carries: its sign-in's.
func (s *Server) pageCSRF(r *http.Request) string {
	if s.cfg.Token == "" {
		return s.csrfToken("")
	}
	id, _ := s.sessionID(r)
	return s.csrfToken(id)
}

// dashboard serves the dashboard with the page's CSRF token in the
// request (CSRFHeader, replacing whatever the client sent), for the page
// to carry on its actions.
func (s *Server) dashboard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set(CSRFHeader, s.pageCSRF(r))
		next.ServeHTTP(w, r)
	})
}

// csrf refuses, 403 csrf, a request that changes something and that a
// page of another site may have made a browser send: with a token, an
// action the sign-in cookie authorised without its page's CSRF token
// (the bearer token itself is never sent by a browser unasked); without
// one (loopback), a request carrying a wrong CSRF token, or none while
// the browser says it comes from another site (Sec-Fetch-Site, Origin).
// Scripts and fleetd's clients send neither and pass as before.
func (s *Server) csrf(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if aerr := s.checkCSRF(r); aerr != nil {
			if r.ContentLength != 0 {
				w.Header().Set("Connection", "close")
			}
			writeError(w, aerr)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) checkCSRF(r *http.Request) *apiError {
	if readOnly(r) || r.URL.Path == "/login" || r.URL.Path == "/logout" {
		return nil
	}
	got := r.Header.Get(CSRFHeader)
	if s.cfg.Token != "" {
		if r.Header.Get("Authorization") != "" {
			return nil // auth let it in: the bearer token was right
		}
		// Only a sign-in cookie let it in (auth), on an action.
		id, _ := s.sessionID(r)
		if got == "" || !hmac.Equal([]byte(got), []byte(s.csrfToken(id))) {
			return fail(http.StatusForbidden, "csrf", "an action of a signed-in browser needs its page's CSRF token (%s): reload the dashboard", CSRFHeader)
		}
		return nil
	}
	switch {
	case got != "":
		if !hmac.Equal([]byte(got), []byte(s.csrfToken(""))) {
			return fail(http.StatusForbidden, "csrf", "wrong CSRF token (%s): reload the dashboard", CSRFHeader)
		}
	case crossSite(r):
		return fail(http.StatusForbidden, "csrf", "a request another site's page made the browser send is refused; the dashboard's own carry %s", CSRFHeader)
	}
	return nil
}

// crossSite reports whether a browser says r comes from a page of another
// origin: Sec-Fetch-Site (every current browser sends it), else an Origin
// that is not this host.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	case "same-origin", "none":
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err != nil || u.Host != r.Host
}
