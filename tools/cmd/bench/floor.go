package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/dragoman-dev/dragoman/tools/internal/floorproxy"
)

// floor serves the floor (internal/floorproxy) in front of --backend, with a
// health check, and with --buffer reading each body whole first.
func floor(args []string) int {
	fs := flag.NewFlagSet("bench floor", flag.ContinueOnError)
	port := fs.Int("port", 4001, "port to listen on (127.0.0.1)")
	backend := fs.String("backend", "http://127.0.0.1:8000", "the backend's base URL")
	buffer := fs.Bool("buffer", false, "read each request body whole before forwarding it (as a proxy that must parse it does), into a buffer of its announced length")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	target, err := url.Parse(*backend)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench floor:", err)
		return 2
	}
	rp := floorproxy.New(target)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /debug/goroutines", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(strconv.Itoa(runtime.NumGoroutine()) + "\n"))
	})
	var h http.Handler = rp
	if *buffer {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := readWhole(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.ContentLength = int64(len(b))
			rp.ServeHTTP(w, r)
		})
	}
	mux.Handle("/", h)
	srv := &http.Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "bench floor:", err)
		return 1
	}
	return 0
}

// maxPresize bounds the buffer readWhole makes from an announced length.
const maxPresize = 64 << 20

// readWhole reads a request body whole, as a proxy that must parse it
// does: into one buffer of its announced length, as Dragoman reads
// (bufpool.ReadAll), so that the row "floor, body read first" measures
// reading first and not io.ReadAll's growing from 512 bytes (about eight
// allocations and twice the body copied for 54 KB).
func readWhole(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= maxPresize {
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(r.Body)
}
