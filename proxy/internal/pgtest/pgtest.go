// Package pgtest starts a real Postgres for tests: Debian's postgresql
// package's initdb and pg_ctl (/usr/lib/postgresql/*/bin), a cluster in a
// temporary directory listening on loopback only, run as the postgres
// user when the tests run as root (Postgres refuses root). Each test gets
// a database of its own. Without Postgres installed the tests fail: they
// do not skip.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

var (
	once    sync.Once
	cluster *Cluster
	err     error
	dbs     atomic.Int64
)

// Cluster is a running Postgres.
type Cluster struct {
	dir, bin string
	port     int
	asUser   []string // the command prefix that runs as the postgres user
}

// Main runs a package's tests and stops the cluster they started.
func Main(m interface{ Run() int }) {
	code := m.Run()
	if cluster != nil {
		cluster.stop()
	}
	os.Exit(code)
}

// New returns the URL of a new, empty database of the package's cluster,
// starting the cluster at the first call.
func New(t testing.TB) string {
	t.Helper()
	once.Do(func() { cluster, err = start() })
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbs.Add(1))
	db, e := sql.Open("pgx", cluster.url("postgres"))
	if e != nil {
		t.Fatal(e)
	}
	defer db.Close()
	if _, e := db.Exec("CREATE DATABASE " + name); e != nil {
		t.Fatalf("pgtest: creating database %s: %v", name, e)
	}
	return cluster.url(name)
}

func (c *Cluster) url(db string) string {
	return fmt.Sprintf("postgres://dragoman@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

func binDir() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", fmt.Errorf("no Postgres here (/usr/lib/postgresql/*/bin/initdb): install Debian's postgresql package (apt-get install -y postgresql); .ci/run does")
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	return filepath.Dir(found[0]), nil
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

func start() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root and no postgres user to run Postgres as (Debian's postgresql package makes it): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		c.asUser = []string{"setpriv", "--reuid=" + u.Uid, "--regid=" + u.Gid, "--clear-groups", "--"}
	}
	data := filepath.Join(dir, "data")
	if out, err := c.run("initdb", "-D", data, "-U", "dragoman", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", c.port, dir)
	if out, err := c.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return nil, fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", c.url("postgres"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	for {
		if err = db.PingContext(ctx); err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			c.stop()
			return nil, fmt.Errorf("the test cluster does not answer: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) run(tool string, args ...string) ([]byte, error) {
	argv := append(append([]string{}, c.asUser...), filepath.Join(c.bin, tool))
	argv = append(argv, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

func (c *Cluster) stop() {
	c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(c.dir)
}
