// Package admin serves the proxy's /admin: a page (html/template, its
// stylesheet embedded, no script, no CDN) behind a master-key login with a
// session cookie (HttpOnly, SameSite=Strict) and forms that carry the
// session's CSRF token, showing the per-user keys with their limits and
// today's and the week's usage, charts of tokens per hour by key and by
// backend (SVG drawn on the server), and each backend's live state; and
// the admin API, /admin/api/keys, with the master key as bearer.
//
// No key's text is ever on the page: a key is shown once, by
// `proxy keys create` or in the answer of POST /admin/api/keys.
package admin

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/internal/authlimit"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

// Options are what the admin serves from.
type Options struct {
	Gate       *keys.Gate
	MasterKeys []string // the keys that log in and call the API; none: /admin answers 404
	// Backends reads each backend's live state (balance.Balancer.Snapshot).
	Backends func() []balance.Status
	Logger   *slog.Logger
	// Limiter slows the guessing of the master key at the login and the
	// API (shared with the proxy's API); nil: one of the admin's own.
	Limiter *authlimit.Limiter
}

// Admin is the /admin handler.
type Admin struct {
	gate     *keys.Gate
	masters  [][]byte
	backends func() []balance.Status
	log      *slog.Logger
	limiter  *authlimit.Limiter

	mu       sync.Mutex
	sessions map[string]session
}

type session struct {
	csrf    string
	expires time.Time
}

// SessionCookie is the name of the admin session's cookie.
const SessionCookie = "dragoman_admin"

// sessionLife is how long a login lasts.
const sessionLife = 12 * time.Hour

// New returns the /admin handler.
func New(o Options) *Admin {
	a := &Admin{gate: o.Gate, backends: o.Backends, log: o.Logger, limiter: o.Limiter, sessions: map[string]session{}}
	if a.limiter == nil {
		a.limiter = authlimit.New(nil)
	}
	for _, k := range o.MasterKeys {
		if k != "" {
			a.masters = append(a.masters, []byte(k))
		}
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.backends == nil {
		a.backends = func() []balance.Status { return nil }
	}
	return a
}

func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if len(a.masters) == 0 {
		http.Error(w, "/admin needs general_settings.master_key (or PROXY_API_KEY): set one to log in", http.StatusNotFound)
		return
	}
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/admin/api/keys"):
		a.api(w, r)
	case p == "/admin/style.css" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Write(styleCSS)
	case (p == "/admin" || p == "/admin/") && r.Method == http.MethodGet:
		a.page(w, r)
	case p == "/admin/login" && r.Method == http.MethodPost:
		a.login(w, r)
	case p == "/admin/logout" && r.Method == http.MethodPost:
		a.logout(w, r)
	case strings.HasPrefix(p, "/admin/revoke/") && r.Method == http.MethodPost:
		a.revokeForm(w, r, strings.TrimPrefix(p, "/admin/revoke/"))
	default:
		http.Error(w, "no such admin page: see /admin", http.StatusNotFound)
	}
}

func (a *Admin) isMaster(got string) bool {
	ok := 0
	for _, k := range a.masters {
		ok |= subtle.ConstantTimeCompare([]byte(got), k)
	}
	return ok == 1
}

func (a *Admin) bearerIsMaster(r *http.Request) bool {
	scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
	return found && strings.EqualFold(scheme, "Bearer") && a.isMaster(strings.TrimSpace(token))
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sessionOf is the request's live session, if it has one.
func (a *Admin) sessionOf(r *http.Request) (string, session, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return "", session{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[c.Value]
	if !ok || time.Now().After(s.expires) {
		delete(a.sessions, c.Value)
		return "", session{}, false
	}
	return c.Value, s, true
}

// sameOrigin refuses a form posted from another site: a browser sends
// Origin with every POST (Sec-Fetch-Site too); a form of this page sends
// this host's.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return origin == "" // no Origin: not a browser's cross-site form
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// checkForm accepts a form posted by this page: same origin, a live
// session, and the session's CSRF token.
func (a *Admin) checkForm(w http.ResponseWriter, r *http.Request) (string, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if !sameOrigin(r) {
		http.Error(w, "a form of another site: refused", http.StatusForbidden)
		return "", false
	}
	id, s, ok := a.sessionOf(r)
	if !ok {
		http.Redirect(w, r, "/admin", http.StatusSeeOther)
		return "", false
	}
	if err := r.ParseForm(); err != nil || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		http.Error(w, "the form's CSRF token is missing or stale: reload /admin", http.StatusForbidden)
		return "", false
	}
	return id, true
}

func (a *Admin) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if !sameOrigin(r) {
		http.Error(w, "a form of another site: refused", http.StatusForbidden)
		return
	}
	addr := authlimit.Addr(r)
	if wait, ok := a.limiter.Allow(addr); !ok {
		a.log.Warn("admin: login throttled: too many wrong keys from this address", "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		w.WriteHeader(http.StatusTooManyRequests)
		a.render(w, "login", loginView{Error: fmt.Sprintf("Too many wrong keys from this address: try again in %d seconds.", int(wait/time.Second))})
		return
	}
	if err := r.ParseForm(); err != nil || !a.isMaster(r.PostForm.Get("key")) {
		a.limiter.Failed(addr)
		a.log.Warn("admin: login refused", "remote", r.RemoteAddr)
		w.WriteHeader(http.StatusUnauthorized)
		a.render(w, "login", loginView{Error: "That is not the proxy's master key."})
		return
	}
	a.limiter.Succeeded(addr)
	id := randomToken()
	now := time.Now()
	a.mu.Lock()
	for k, s := range a.sessions {
		if now.After(s.expires) {
			delete(a.sessions, k)
		}
	}
	a.sessions[id] = session{csrf: randomToken(), expires: now.Add(sessionLife)}
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/admin", MaxAge: int(sessionLife / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	a.log.Info("admin: logged in", "remote", r.RemoteAddr)
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
}

func (a *Admin) logout(w http.ResponseWriter, r *http.Request) {
	id, ok := a.checkForm(w, r)
	if !ok {
		return
	}
	a.mu.Lock()
	delete(a.sessions, id)
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/admin", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
}

func (a *Admin) revokeForm(w http.ResponseWriter, r *http.Request, name string) {
	if _, ok := a.checkForm(w, r); !ok {
		return
	}
	name, err := url.PathUnescape(name)
	if err == nil {
		err = a.gate.Revoke(r.Context(), name)
	}
	if err != nil {
		http.Error(w, "revoking: "+err.Error(), http.StatusBadRequest)
		return
	}
	a.log.Info("admin: key revoked", "name", name)
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
}
