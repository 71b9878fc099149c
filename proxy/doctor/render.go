package doctor

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// WriteText writes the report as a table for people: one block per backend
// model, one line per check, each failure and warning followed by its fix.
func WriteText(w io.Writer, rep Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "proxy check: %s\n", rep.Config)
	for _, be := range rep.Backends {
		server := ""
		if be.Server != "" {
			server = " (" + be.Server + ")"
		}
		fmt.Fprintf(&b, "\n%s -> %s at %s%s\n", strings.Join(be.Aliases, ", "), be.Model, be.APIBase, server)
		writeResults(&b, be.Results)
	}
	if len(rep.Clients) > 0 {
		b.WriteString("\nclients\n")
		writeResults(&b, rep.Clients)
	}
	switch {
	case rep.OK && rep.Warnings == 0:
		b.WriteString("\nall checks passed\n")
	case rep.OK:
		fmt.Fprintf(&b, "\nno failures, %d warning(s)\n", rep.Warnings)
	default:
		fmt.Fprintf(&b, "\n%d failure(s), %d warning(s)\n", rep.Failures, rep.Warnings)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeResults writes one line per check, each failure and warning
// followed by its fix, each info by its note.
func writeResults(b *strings.Builder, results []Result) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, r := range results {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", mark(r.Status), r.Check, r.Detail)
		switch {
		case r.Fix != "" && (r.Status == Fail || r.Status == Warn):
			fmt.Fprintf(tw, "  \t\tfix: %s\n", r.Fix)
		case r.Fix != "" && r.Status == Info:
			fmt.Fprintf(tw, "  \t\tnote: %s\n", r.Fix)
		}
	}
	tw.Flush()
}

func mark(s Status) string {
	switch s {
	case OK:
		return "ok"
	case Warn:
		return "WARN"
	case Fail:
		return "FAIL"
	case Info:
		return "info"
	}
	return "-"
}

// WriteJSON writes the report as one indented JSON object, for scripts.
func WriteJSON(w io.Writer, rep Report) error {
	b, err := json.Marshal(rep, jsontext.Multiline(true), json.Deterministic(true))
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ConfigFailure is the report of a config that does not load: its error
// names the file, the line and the fix.
func ConfigFailure(path string, err error) Report {
	return Report{Config: path, Failures: 1, Backends: []Backend{{
		Results: []Result{{Check: "config", Status: Fail, Detail: err.Error()}},
	}}}
}
