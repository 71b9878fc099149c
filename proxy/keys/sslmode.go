package keys

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// SSLModeWarning is the warning a database_url deserves, "" for none: a
// Postgres on another machine reached with no sslmode (pgx then takes
// prefer), or with disable, allow or prefer, which send the keys' hashes
// and the usage in the clear when the server offers no TLS, and never
// check a certificate. getenv reads PGSSLMODE, which pgx takes when the
// URL names no sslmode (nil: none read).
func SSLModeWarning(databaseURL string, getenv func(string) string) string {
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return ""
	}
	hosts := strings.Split(u.Host, ",")
	if h := u.Query().Get("host"); h != "" {
		hosts = strings.Split(h, ",")
	}
	remote := ""
	for _, h := range hosts {
		if !loopback(h) {
			remote = h
			break
		}
	}
	if remote == "" {
		return ""
	}
	mode, from := u.Query().Get("sslmode"), "database_url"
	if mode == "" && getenv != nil {
		mode, from = getenv("PGSSLMODE"), "PGSSLMODE"
	}
	switch mode {
	case "require", "verify-ca", "verify-full":
		return ""
	case "":
		return fmt.Sprintf("database_url reaches Postgres at %s without sslmode: the driver then tries TLS without checking the certificate, and falls back to plaintext; add sslmode=verify-full (docs/limits.md)", remote)
	}
	return fmt.Sprintf("database_url reaches Postgres at %s with sslmode=%s (%s): the connection may be in plaintext, and no certificate is checked; use sslmode=verify-full (docs/limits.md)", remote, mode, from)
}

// loopback says whether a Postgres host (host, host:port, [v6]:port, or a
// Unix socket's directory) is this machine.
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "" || strings.HasPrefix(host, "/") || strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
