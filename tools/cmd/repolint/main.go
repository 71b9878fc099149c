// Command repolint checks what gofmt and vet cannot: what the repository
// tracks, and the links of its documentation (make lint runs it).
//
//   - No tracked binary: a file that starts with an ELF, Mach-O or PE
//     header, or that git marks executable and is no script (no "#!").
//   - No tracked file over --max-bytes (1 MB) outside a fixtures/ or
//     testdata/ folder.
//   - Every relative link of README.md and docs/*.md names a tracked file
//     or folder, and every #anchor a heading (or an HTML id) of the page it
//     points into, the anchor computed as GitHub computes it.
//   - In a Go workspace (go.work), the packages' imports keep the rules of
//     the layout that docs/architecture.md states (see layout.go).
//
// The tracked files are those of git's index (git ls-files), read from the
// work tree. It prints one line per finding and exits 1 when there is any.
//
//	repolint [--dir DIR] [--max-bytes N]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	fs := flag.NewFlagSet("repolint", flag.ExitOnError)
	dir := fs.String("dir", ".", "the repository's top folder")
	maxBytes := fs.Int64("max-bytes", 1<<20, "the largest file tracked outside fixtures/ and testdata/")
	_ = fs.Parse(os.Args[1:])
	os.Exit(run(*dir, *maxBytes, os.Stdout))
}

// run checks the repository at dir and writes the findings to w: 0 when
// there is none, 1 when there are, 2 when the checks could not run.
func run(dir string, maxBytes int64, w io.Writer) int {
	files, err := trackedFiles(dir)
	if err != nil {
		fmt.Fprintln(w, "repolint:", err)
		return 2
	}
	findings := checkTracked(dir, files, maxBytes)
	links, err := checkDocLinks(dir, files)
	if err != nil {
		fmt.Fprintln(w, "repolint:", err)
		return 2
	}
	findings = append(findings, links...)
	if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
		pkgs, err := workspaceImports(dir)
		if err != nil {
			fmt.Fprintln(w, "repolint:", err)
			return 2
		}
		findings = append(findings, checkLayout(pkgs)...)
	}
	for _, f := range findings {
		fmt.Fprintln(w, f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(w, "repolint: %d finding(s)\n", len(findings))
		return 1
	}
	return 0
}
