// Package keys owns the proxy's per-user keys: the store they live in
// (SQLite through a pure-Go driver, or Postgres through pgx, named by
// general_settings.database_url), its versioned schema, the keys' limits
// (models, requests and tokens per minute, token budgets) and the usage
// rows of every request made with a key, written in batches off the
// request's path.
//
// A key is shown once, when it is made, and stored as its SHA-256 hash:
// nothing in the store, a log, a label or an error holds the key itself.
// With SQLite the limits are counted in the process; with Postgres they are
// counted in the database, so that they hold across replicas.
package keys

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"
)

// Dialect is the kind of database a store is in.
type Dialect int

const (
	SQLite Dialect = iota
	Postgres
)

func (d Dialect) String() string {
	if d == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// Store is the database of keys and usage.
type Store struct {
	db      *sql.DB
	dialect Dialect
	url     string // the database_url, to keep its password out of errors
}

// Open opens the database a database_url names, creating an SQLite file
// (and its directory) when there is none, and applies the migrations this
// version knows.
//
//	sqlite:///data/dragoman.db   (an absolute path)
//	sqlite://dragoman.db         (relative to the working directory)
//	postgres://user:pass@host:5432/db?sslmode=verify-full
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	s, err := openOnly(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, s.db, s.dialect, len(migrations())); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

func openOnly(ctx context.Context, databaseURL string) (*Store, error) {
	dialect, dsn, err := parseURL(databaseURL)
	if err != nil {
		return nil, err
	}
	driver := "sqlite"
	if dialect == Postgres {
		driver = "pgx"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("database_url: %v", err)
	}
	if dialect == SQLite {
		// One writer at a time is SQLite's rule; one connection keeps
		// the process's own writes from waiting on each other.
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(16)
		db.SetMaxIdleConns(16)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("database_url: cannot reach the %s database: %v. Check general_settings.database_url (the server, its port, the user and password)", dialect, redactURL(err.Error(), databaseURL))
	}
	return &Store{db: db, dialect: dialect, url: databaseURL}, nil
}

// parseURL reads a database_url into a driver's data source name.
func parseURL(raw string) (Dialect, string, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return 0, "", errors.New("database_url must start with sqlite:// or postgres://, e.g. sqlite:///data/dragoman.db")
	}
	switch scheme {
	case "postgres", "postgresql":
		if _, err := url.Parse(raw); err != nil {
			return 0, "", errors.New("database_url is not a valid postgres:// URL: write postgres://user:password@host:5432/dbname")
		}
		return Postgres, raw, nil
	case "sqlite":
		path, _, _ := strings.Cut(rest, "?")
		if path == "" {
			return 0, "", errors.New("database_url sqlite:// names no file: write sqlite:///data/dragoman.db (absolute) or sqlite://dragoman.db (relative)")
		}
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return 0, "", fmt.Errorf("database_url: cannot make the directory of the SQLite file: %v", err)
			}
		}
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Set("_txlock", "immediate")
		return SQLite, "file:" + path + "?" + q.Encode(), nil
	}
	return 0, "", fmt.Errorf("database_url scheme %q is not known: use sqlite:///path/to/file.db or postgres://user:password@host/db", scheme)
}

// redactURL keeps a database_url's password out of a driver's message.
func redactURL(msg, raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return msg
	}
	if p, ok := u.User.Password(); ok && len(p) >= 3 {
		msg = strings.ReplaceAll(msg, p, "[redacted]")
	}
	return msg
}

// unreachable is the error of a request whose limits the database did
// not count: ErrUnreachable, with what was done and the driver's text
// (without the password) for the log.
func (s *Store) unreachable(what string, err error) error {
	return fmt.Errorf("%w: %s: %s", ErrUnreachable, what, redactURL(err.Error(), s.url))
}

// Dialect is the kind of database the store is in.
func (s *Store) Dialect() Dialect { return s.dialect }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// q rewrites a query written with ? placeholders for the store's dialect.
func (s *Store) q(query string) string {
	if s.dialect != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}
