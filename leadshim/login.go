package leadshim

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SessionCookie names the cookie a browser gets from /login: it stands
// for the bearer token on GET and HEAD requests (the dashboard, /roster,
// /events), never on a send.
const SessionCookie = "fleetd_session"

// maxSessions bounds the sign-ins the shim remembers; past it the one
// closest to expiring is forgotten (it signs in again).
const maxSessions = 4096

// sessions are the dashboard sign-ins this shim handed out, by id, with
// their expiry. A cookie names one: signing out forgets it, so a copy of
// the cookie opens nothing after, and a restart (or a new token) signs
// everyone out.
type sessions struct {
	mu   sync.Mutex
	byID map[string]time.Time
}

// add remembers a new sign-in until exp and returns its id.
func (ss *sessions) add(now, exp time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b[:])
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byID == nil {
		ss.byID = map[string]time.Time{}
	}
	if len(ss.byID) >= maxSessions {
		soonest := ""
		for k, e := range ss.byID {
			if !now.Before(e) {
				delete(ss.byID, k)
			} else if soonest == "" || e.Before(ss.byID[soonest]) {
				soonest = k
			}
		}
		if len(ss.byID) >= maxSessions {
			delete(ss.byID, soonest)
		}
	}
	ss.byID[id] = exp
	return id
}

func (ss *sessions) live(id string, now time.Time) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	exp, ok := ss.byID[id]
	return ok && now.Before(exp)
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, id)
}

// sessionValue is sign-in id until exp: "v2.<id>.<unix>.<mac>", the MAC
// an HMAC-SHA256 of id and expiry keyed by the token, so a forged or
// altered cookie is refused before the session table is looked at. It
// holds no secret.
func sessionValue(token, id string, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return "v2." + id + "." + e + "." + sessionMAC(token, id, e)
}

func sessionMAC(token, id, exp string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("fleetd dashboard login\x00" + id + "\x00" + exp))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sessionID is the id of the sign-in r's cookie names, when the cookie
// is genuine and unexpired — whether or not the shim still holds it.
func (s *Server) sessionID(r *http.Request) (string, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return "", false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 4 || parts[0] != "v2" {
		return "", false
	}
	id, exp, mac := parts[1], parts[2], parts[3]
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !s.cfg.Now().Before(time.Unix(unix, 0)) {
		return "", false
	}
	if !hmac.Equal([]byte(mac), []byte(sessionMAC(s.cfg.Token, id, exp))) {
		return "", false
	}
	return id, true
}

// validSession reports whether r carries a sign-in this shim handed out,
// unexpired and not signed out.
func (s *Server) validSession(r *http.Request) bool {
	id, ok := s.sessionID(r)
	return ok && s.sessions.live(id, s.cfg.Now())
}

// readOnly: a login cookie counts for requests that change nothing.
func readOnly(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

// wantsPage reports whether an unauthorized request is a browser asking
// for a dashboard page, which gets the login form instead of a JSON 401.
func (s *Server) wantsPage(r *http.Request) bool {
	return s.cfg.Dashboard != nil && readOnly(r) && strings.Contains(r.Header.Get("Accept"), "text/html") &&
		(r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/"))
}

// Compiled on first use, not as every fleetd process (each hook run) starts.
var loginTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>fleetd — sign in</title>
<style>body{font:15px system-ui,sans-serif;background:#0f1419;color:#d8dee9;display:grid;place-items:center;height:90vh}
form{background:#1a2029;padding:2em;border-radius:8px;min-width:22em}input{width:100%;box-sizing:border-box;padding:.5em;margin:.5em 0 1em;background:#0f1419;color:inherit;border:1px solid #3b4252;border-radius:4px}
button{padding:.5em 1.5em;background:#5e81ac;color:#fff;border:0;border-radius:4px;cursor:pointer}.err{color:#bf616a}</style></head>
<body><form method="post" action="/login" id="login">
<h1>fleetd</h1>
<p>This fleet's dashboard needs its token (<code>fleetd up --token</code>).</p>
{{if .Error}}<p class="err" id="login-error">{{.Error}}</p>{{end}}
<label for="token">Token</label>
<input type="password" name="token" id="token" autocomplete="current-password" autofocus required>
<input type="hidden" name="next" value="{{.Next}}">
<button type="submit">Sign in</button>
</form></body></html>
`))
})

// loginPage writes the sign-in form with status.
func (s *Server) loginPage(w http.ResponseWriter, status int, next, errMsg string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = loginTmpl().Execute(w, struct{ Next, Error string }{safeNext(next), errMsg})
}

// safeNext keeps a post-login redirect on this shim: a local path,
// never another host. A browser removes tabs and newlines from a URL and
// reads a backslash as a slash, so "/\t/evil" and "/\\evil" are
// "//evil" to it: any control character or backslash is refused, not
// only a leading "//". Anything else unsure is "/".
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	for _, c := range next {
		if c < 0x20 || c == 0x7f || c == '\\' || (c >= 0x80 && c < 0xa0) {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	return next
}

// getLogin serves the form; without a token there is nothing to sign in
// to.
func (s *Server) getLogin(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if s.cfg.Token == "" || s.validSession(r) {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.loginPage(w, http.StatusOK, next, "")
}

// maxLoginForm bounds a sign-in form's body.
const maxLoginForm = 8 << 10

// postLogin checks the token (constant-time) and, when it is right, sets
// the login cookie: HttpOnly, SameSite=Strict, Secure over TLS, for
// LoginTTL. Wrong tokens are throttled per client (failThrottle): once
// its allowance is spent, a client is answered 429 without its token
// being looked at until the allowance refills.
func (s *Server) postLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
	if err := r.ParseForm(); err != nil {
		writeError(w, fail(http.StatusBadRequest, "bad_form", "sign-in form: %v", err))
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	if s.cfg.Token == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	client, now := clientKey(r), s.cfg.Now()
	if wait := s.fails.wait(client, now); wait > 0 {
		s.metrics.logins.WithLabelValues("throttled").Inc()
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		s.loginPage(w, http.StatusTooManyRequests, next, fmt.Sprintf("Too many wrong tokens from this address: try again in %d s.", secs))
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("token")), []byte(s.cfg.Token)) != 1 {
		s.fails.failed(client, now)
		s.metrics.logins.WithLabelValues("refused").Inc()
		s.loginPage(w, http.StatusUnauthorized, next, "That is not this fleet's token.")
		return
	}
	s.metrics.logins.WithLabelValues("ok").Inc()
	exp := now.Add(s.cfg.LoginTTL)
	id := s.sessions.add(now, exp)
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: sessionValue(s.cfg.Token, id, exp), Path: "/", Expires: exp,
		MaxAge: int(s.cfg.LoginTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// postLogout ends the browser's login: the shim forgets the sign-in, so
// the cookie — and any copy of it — opens nothing any more.
func (s *Server) postLogout(w http.ResponseWriter, r *http.Request) {
	if id, ok := s.sessionID(r); ok {
		s.sessions.remove(id)
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
