package keys

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The schema's versions, one file each: migrations/NNNN_what.sql, applied
// in order, each once, in one transaction with its row in
// schema_migrations. A version once released is never edited: a change is
// a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() []migration {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("keys: migration file without a version: " + e.Name())
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			panic(fmt.Sprintf("keys: migration %s out of sequence (want version %d)", m.name, i+1))
		}
	}
	return out
}

// SchemaVersion is the schema version this build migrates to.
func SchemaVersion() int { return len(migrations()) }

// advisoryLock is the Postgres lock replicas starting together take so
// that one applies the migrations and the others wait for it.
const advisoryLock = 0x64726167 // "drag"

// migrate brings db's schema up to version target.
func migrate(ctx context.Context, db *sql.DB, d Dialect, target int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("database: starting the migrations: %v", err)
	}
	defer tx.Rollback()
	if d == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", advisoryLock); err != nil {
			return fmt.Errorf("database: locking for the migrations: %v", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("database: cannot create schema_migrations (does the user may create tables?): %v", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("database: reading the schema version: %v", err)
	}
	all := migrations()
	if current > len(all) {
		return fmt.Errorf("database: its schema is at version %d, newer than this proxy knows (%d): run a proxy at least as new as the one that migrated it", current, len(all))
	}
	insert := `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`
	if d == Postgres {
		insert = `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`
	}
	for _, m := range all[current:min(target, len(all))] {
		for _, stmt := range statements(m.sql) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("database: migration %s: %v", m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, insert, m.version, m.name, time.Now().Unix()); err != nil {
			return fmt.Errorf("database: recording migration %s: %v", m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("database: committing the migrations: %v", err)
	}
	return nil
}

// statements splits a migration file into its statements (they end with a
// semicolon at the end of a line; comments are dropped).
func statements(script string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(script, "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// schemaVersion reads the version the database is at.
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
