package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

const keysUsage = `usage:
  proxy keys create --name NAME [--models a,b] [--rpm N] [--tpm N] [--budget-tokens N --budget-period 1d] [--expires 30d] --config FILE
  proxy keys list --config FILE
  proxy keys show NAME --config FILE
  proxy keys revoke NAME --config FILE
The keys live in the database of general_settings.database_url.`

// keysCmd runs `proxy keys ...`: the per-user keys in the config's
// database. create prints the key once, alone on its output's last line.
func keysCmd(args []string, stdout, stderr io.Writer, getenv config.Getenv) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, keysUsage)
		return 2
	}
	verb := args[0]
	fs := flag.NewFlagSet("proxy keys "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "config.yaml", "path of the YAML config (its general_settings.database_url)")
	var sp keys.Spec
	var models, period, expires string
	if verb == "create" {
		fs.StringVar(&sp.Name, "name", "", "the key's name (its owner), shown in the usage and the metrics")
		fs.StringVar(&models, "models", "", "the model_names it may use, comma-separated (default: all)")
		fs.Int64Var(&sp.RPM, "rpm", 0, "requests per minute (0: no limit)")
		fs.Int64Var(&sp.TPM, "tpm", 0, "tokens (input + output) per minute (0: no limit)")
		fs.Int64Var(&sp.BudgetTokens, "budget-tokens", 0, "tokens per --budget-period (0: no budget)")
		fs.StringVar(&period, "budget-period", "", "the budget's period: 1h, 1d, 7d, 30d (periods start on UTC boundaries)")
		fs.StringVar(&expires, "expires", "", "expires after: 12h, 30d, 4w (default never)")
	}
	name, err := parseWithName(fs, args[1:])
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, keysUsage)
		}
		return 2
	}
	switch verb {
	case "create", "list":
		if name != "" {
			fmt.Fprintf(stderr, "proxy keys %s: unexpected argument %q\n%s\n", verb, name, keysUsage)
			return 2
		}
	case "show", "revoke":
		if name == "" {
			fmt.Fprintf(stderr, "proxy keys %s: name the key, e.g. proxy keys %s alice --config FILE\n", verb, verb)
			return 2
		}
	default:
		fmt.Fprintf(stderr, "proxy keys: unknown command %q\n%s\n", verb, keysUsage)
		return 2
	}
	cfg, err := config.Load(*configPath, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "proxy keys: config:", err)
		return 1
	}
	if cfg.DatabaseURL == "" {
		fmt.Fprintf(stderr, "proxy keys: %s has no general_settings.database_url: add one (e.g. database_url: sqlite:///data/dragoman.db) to keep per-user keys\n", cfg.Path)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := keys.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		fmt.Fprintln(stderr, "proxy keys:", err)
		return 1
	}
	defer store.Close()
	now := time.Now()
	switch verb {
	case "create":
		if models != "" {
			sp.Models = strings.Split(models, ",")
		}
		if period != "" {
			if sp.BudgetPeriod, err = keys.ParsePeriod(period); err != nil {
				fmt.Fprintln(stderr, "proxy keys create: --budget-period:", err)
				return 2
			}
		}
		if expires != "" {
			if sp.ExpiresIn, err = keys.ParsePeriod(expires); err != nil {
				fmt.Fprintln(stderr, "proxy keys create: --expires:", err)
				return 2
			}
		}
		k, text, err := store.Create(ctx, sp, now)
		if err != nil {
			fmt.Fprintln(stderr, "proxy keys create:", err)
			return 1
		}
		fmt.Fprintf(stdout, "key %q created: %s\n", k.Name, describe(k))
		fmt.Fprintln(stdout, "It is shown this once (the database keeps only its hash): give it to its owner now.")
		fmt.Fprintln(stdout, text)
	case "list":
		list, err := store.List(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "proxy keys list:", err)
			return 1
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSTATE\tMODELS\tRPM\tTPM\tBUDGET\tEXPIRES\tREQUESTS\tTOKENS (period)")
		for _, k := range list {
			u, err := store.KeyUsageSince(ctx, k.Name, k.PeriodStart(now))
			if err != nil {
				fmt.Fprintln(stderr, "proxy keys list:", err)
				return 1
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", k.Name, state(k, now), orAll(k.Models), limit(k.RPM), limit(k.TPM),
				budget(k), when(k.ExpiresAt), u.Requests, u.InputTokens+u.OutputTokens)
		}
		tw.Flush()
	case "show":
		k, err := store.Get(ctx, name)
		if err != nil {
			fmt.Fprintln(stderr, "proxy keys show:", err)
			return 1
		}
		fmt.Fprintf(stdout, "key %q (%s), created %s: %s\n", k.Name, state(k, now), k.CreatedAt.Format(time.RFC3339), describe(k))
		for _, p := range []struct {
			what  string
			since time.Time
		}{
			{"this period (since " + k.PeriodStart(now).Format(time.RFC3339) + ")", k.PeriodStart(now)},
			{"the last 24 hours", now.Add(-24 * time.Hour)},
			{"the last 7 days", now.Add(-7 * 24 * time.Hour)},
		} {
			u, err := store.KeyUsageSince(ctx, k.Name, p.since)
			if err != nil {
				fmt.Fprintln(stderr, "proxy keys show:", err)
				return 1
			}
			fmt.Fprintf(stdout, "  %s: %d requests, %d input tokens, %d output tokens\n", p.what, u.Requests, u.InputTokens, u.OutputTokens)
		}
	case "revoke":
		if err := store.Revoke(ctx, name, now); err != nil {
			fmt.Fprintln(stderr, "proxy keys revoke:", err)
			return 1
		}
		fmt.Fprintf(stdout, "key %q revoked: the proxy refuses it within a second (its usage stays)\n", name)
	}
	return 0
}

// parseWithName parses flags that may come before and after one
// positional name.
func parseWithName(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", nil
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if err := fs.Parse(rest); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		return "", errors.New("extra arguments")
	}
	return name, nil
}

func describe(k *keys.Key) string {
	parts := []string{"models " + orAll(k.Models), "rpm " + limit(k.RPM), "tpm " + limit(k.TPM), "budget " + budget(k), "expires " + when(k.ExpiresAt)}
	return strings.Join(parts, ", ")
}

func state(k *keys.Key, now time.Time) string {
	switch {
	case k.Revoked():
		return "revoked"
	case k.Expired(now):
		return "expired"
	}
	return "active"
}

func orAll(models []string) string {
	if len(models) == 0 {
		return "all"
	}
	return strings.Join(models, ",")
}

func limit(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

func budget(k *keys.Key) string {
	if k.BudgetTokens == 0 {
		return "-"
	}
	return strconv.FormatInt(k.BudgetTokens, 10) + "/" + keys.FormatPeriod(k.BudgetPeriod)
}

func when(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339)
}
