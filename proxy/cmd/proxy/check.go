package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/doctor"
)

// check is `proxy check --config FILE [--json]`: it checks the config and
// each backend model it names (package doctor), and prints a table, or
// JSON with --json. Exit status: 0 when nothing failed (warnings allowed),
// 1 when a check failed or the config does not load, 2 on bad flags.
func check(args []string, stdout, stderr io.Writer, getenv config.Getenv) int {
	fs := flag.NewFlagSet("proxy check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		configPath = fs.String("config", "config.yaml", "path of the YAML config to check")
		asJSON     = fs.Bool("json", false, "print the report as JSON, for scripts")
		timeout    = fs.Duration("timeout", 60*time.Second, "how long each backend's checks may take (a cold model needs time)")
		probe      = fs.Bool("probe-overflow", false, "send each backend a prompt just over its discovered window and report how it words the overflow")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: proxy check --config FILE [--json] [--timeout 60s] [--probe-overflow]")
		fmt.Fprintln(stderr, "Checks each backend of the config: reachable, key, model, context window, tool calls, reasoning field, native Messages endpoint, first-token latency, the coding client's tool schemas, and (--probe-overflow) how an overflow is worded; then what the clients need: web search, WebFetch, and whether notify-chat is registered where Claude Code and Codex read it.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "proxy check: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	cfg, err := config.Load(*configPath, getenv)
	if err != nil {
		if *asJSON {
			doctor.WriteJSON(stdout, doctor.ConfigFailure(*configPath, err))
		} else {
			fmt.Fprintln(stdout, "proxy check:", *configPath)
			fmt.Fprintln(stdout, "  FAIL  config  "+err.Error())
		}
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep := doctor.Run(ctx, cfg, doctor.Options{Timeout: *timeout, ProbeOverflow: *probe, Hooks: hookPlaces(getenv)})
	if *asJSON {
		err = doctor.WriteJSON(stdout, rep)
	} else {
		err = doctor.WriteText(stdout, rep)
	}
	if err != nil {
		fmt.Fprintln(stderr, "proxy check:", err)
		return 1
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// hookPlaces are the folders of the clients this check runs beside: its
// home, its working folder, CLAUDE_CONFIG_DIR and CODEX_HOME.
func hookPlaces(getenv config.Getenv) *doctor.HookPlaces {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	wd, _ := os.Getwd()
	places := doctor.Places(home, wd, func(name string) string { v, _ := getenv(name); return v })
	return &places
}
