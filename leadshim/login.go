package leadshim

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SessionCookie names the cookie a browser gets from /login: it stands
// for the bearer token on GET and HEAD requests (the dashboard, /roster,
// /events), never on a send.
const SessionCookie = "fleetd_session"

// sessionValue is a login that expires at exp: "v1.<unix>.<mac>", the
// MAC an HMAC-SHA256 of the expiry keyed by the token. It holds no
// secret, outlives no token (a new token voids every cookie) and needs
// no server-side store.
func sessionValue(token string, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return "v1." + e + "." + sessionMAC(token, e)
}

func sessionMAC(token, exp string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("fleetd dashboard login\x00" + exp))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validSession reports whether r carries an unexpired login for the
// token.
func (s *Server) validSession(r *http.Request) bool {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return false
	}
	v, ok := strings.CutPrefix(c.Value, "v1.")
	if !ok {
		return false
	}
	exp, mac, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !s.cfg.Now().Before(time.Unix(unix, 0)) {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(sessionMAC(s.cfg.Token, exp)))
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

// safeNext keeps a post-login redirect on this shim: a path, never
// another host ("//evil", "/\evil").
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, `/\`) || strings.ContainsAny(next, "\r\n") {
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
// LoginTTL.
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
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("token")), []byte(s.cfg.Token)) != 1 {
		s.metrics.logins.WithLabelValues("refused").Inc()
		s.loginPage(w, http.StatusUnauthorized, next, "That is not this fleet's token.")
		return
	}
	s.metrics.logins.WithLabelValues("ok").Inc()
	exp := s.cfg.Now().Add(s.cfg.LoginTTL)
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: sessionValue(s.cfg.Token, exp), Path: "/", Expires: exp,
		MaxAge: int(s.cfg.LoginTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// postLogout ends the browser's login.
func (s *Server) postLogout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
