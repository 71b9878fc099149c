package keys

import (
	"strings"
	"testing"
)

// TestSSLModeWarning: a Postgres on another machine without sslmode, or
// with disable, allow or prefer, is warned of; verify-full, require, a
// loopback or socket host, SQLite are not; PGSSLMODE counts when the URL
// names none.
func TestSSLModeWarning(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for url, want := range map[string]string{
		"postgres://u:p@db.example.com:5432/dragoman":                         "without sslmode",
		"postgres://u:p@db.example.com/dragoman?sslmode=disable":              "sslmode=disable",
		"postgresql://u@10.0.0.5/dragoman?sslmode=prefer":                     "sslmode=prefer",
		"postgres://u@db.example.com/d?sslmode=allow":                         "sslmode=allow",
		"postgres://u@127.0.0.1,db.example.com/d":                             "db.example.com",
		"postgres://u@db.example.com/d?sslmode=verify-full":                   "",
		"postgres://u@db.example.com/d?sslmode=require":                       "",
		"postgres://u@127.0.0.1:5432/d?sslmode=disable":                       "",
		"postgres://u@localhost/d":                                            "",
		"postgres://u@[::1]:5432/d":                                           "",
		"postgres://u@/d?host=/var/run/postgresql":                            "",
		"sqlite:///data/dragoman.db":                                          "",
		"postgres://u@db.example.com/d?sslmode=verify-ca&sslrootcert=/ca.pem": "",
	} {
		got := SSLModeWarning(url, getenv)
		if (want == "") != (got == "") || !strings.Contains(got, want) || strings.Contains(got, ":p@") {
			t.Errorf("%s: %q, want %q", url, got, want)
		}
	}
	env["PGSSLMODE"] = "verify-full"
	if got := SSLModeWarning("postgres://u@db.example.com/d", getenv); got != "" {
		t.Errorf("PGSSLMODE=verify-full: %q", got)
	}
	env["PGSSLMODE"] = "disable"
	if got := SSLModeWarning("postgres://u@db.example.com/d", getenv); !strings.Contains(got, "PGSSLMODE") {
		t.Errorf("PGSSLMODE=disable: %q", got)
	}
}
