package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// The rules of the layout that docs/architecture.md states, checked on the
// real imports (go list, tests left out). A package is named by its folder
// from the repository's top ("proxy/translate"); "proxy/internal/..." is
// that folder and every one below it. A new package a rule does not name
// is free; when a rule should change, change it here and on that page.
var (
	// isolated packages import no package of the repository: the wire
	// formats know nothing of each other, upstream only sends.
	isolated = []string{"proxy/messages", "proxy/chat", "proxy/responses", "proxy/sse", "proxy/upstream", "proxy/internal/apierror", "proxy/internal/jsonscan"}
	// sharedByIsolated: what the isolated packages may import all the
	// same, each itself isolated: the error shape Chat and Responses
	// share, and the JSON reader of the wire packages' quick decoders.
	sharedByIsolated = []string{"proxy/internal/apierror", "proxy/internal/jsonscan"}

	// pure packages do no I/O: none of these standard packages.
	pure         = []string{"proxy/translate", "proxy/textcall"}
	impureStdlib = []string{"net", "net/http", "os", "os/exec", "io/fs", "time", "log", "log/slog"}

	// mayImport: the only packages of the repository these import.
	mayImport = map[string][]string{
		"proxy/translate": {"proxy/messages", "proxy/chat", "proxy/responses", "proxy/sse", "proxy/websearch", "proxy/textcall", "proxy/internal/..."},
		"proxy/textcall":  {"proxy/internal/..."},
	}

	// mustNotImport: balance owns backend choice and health, and knows
	// nothing of formats, translation, sending or the HTTP front.
	mustNotImport = map[string][]string{
		"proxy/balance": {"proxy/messages", "proxy/chat", "proxy/responses", "proxy/translate", "proxy/upstream", "proxy/server"},
		"notifier/...":  {"proxy/...", "warmer/...", "tools/..."},
		"proxy/...":     {"warmer/...", "notifier/...", "tools/..."},
	}

	// importedOnlyBy: the HTTP front is wired by the commands (and served
	// in-process by the bench), never imported by a library package; the
	// test helpers are imported by tests only.
	importedOnlyBy = map[string][]string{
		"proxy/server":          {"proxy/cmd/...", "tools/cmd/..."},
		"proxy/internal/pgtest": {},
		"proxy/internal/logbuf": {},
	}
)

// matches: pattern names pkg ("a/b", or "a/..." for a and below).
func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func matchesAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, pkg) })
}

// imports maps each package of the repository to its imports: those of the
// repository by folder, the others (the standard library, modules) by
// import path.
type imports map[string][]string

// checkLayout checks the rules on the packages' imports.
func checkLayout(pkgs imports) []string {
	var findings []string
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	local := func(imp string) bool { _, ok := pkgs[imp]; return ok }
	for _, pkg := range names {
		for _, imp := range pkgs[pkg] {
			switch {
			case slices.Contains(isolated, pkg) && local(imp) && !slices.Contains(sharedByIsolated, imp):
				findings = append(findings, fmt.Sprintf("%s imports %s: a wire format (or upstream) imports no package of the repository", pkg, imp))
			case slices.Contains(pure, pkg) && slices.Contains(impureStdlib, imp):
				findings = append(findings, fmt.Sprintf("%s imports %s: it is pure (no network, file, clock or log)", pkg, imp))
			}
			if allowed, ok := mayImport[pkg]; ok && local(imp) && !matchesAny(allowed, imp) {
				findings = append(findings, fmt.Sprintf("%s imports %s: it may import only %s", pkg, imp, strings.Join(allowed, ", ")))
			}
			for pattern, banned := range mustNotImport {
				if matches(pattern, pkg) && local(imp) && matchesAny(banned, imp) {
					findings = append(findings, fmt.Sprintf("%s imports %s: %s must not import %s", pkg, imp, pattern, strings.Join(banned, ", ")))
				}
			}
			if by, ok := importedOnlyBy[imp]; ok && !matchesAny(by, pkg) {
				who := "tests only"
				if len(by) > 0 {
					who = strings.Join(by, ", ")
				}
				findings = append(findings, fmt.Sprintf("%s imports %s, which is for %s", pkg, imp, who))
			}
		}
	}
	sort.Strings(findings)
	for i := range findings {
		findings[i] = "layout: " + findings[i] + " (the rules: docs/architecture.md, tools/cmd/repolint/layout.go)"
	}
	return findings
}

// workspaceImports lists, with go list, the imports of every package of
// the workspace at dir (go.work's modules), tests left out.
func workspaceImports(dir string) (imports, error) {
	mods, err := goList(dir, "list", "-m", "-f", "{{.Path}}\t{{.Dir}}")
	if err != nil {
		return nil, err
	}
	top, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	type module struct{ path, folder string }
	var modules []module
	var patterns []string
	for _, line := range mods {
		modPath, modDir, _ := strings.Cut(line, "\t")
		rel, err := filepath.Rel(top, modDir)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		modules = append(modules, module{modPath, filepath.ToSlash(rel)})
		patterns = append(patterns, "./"+filepath.ToSlash(rel)+"/...")
	}
	// The longest module path first, so that a module inside another's
	// path is named by its own folder.
	sort.Slice(modules, func(i, j int) bool { return len(modules[i].path) > len(modules[j].path) })
	folder := func(imp string) string {
		for _, m := range modules {
			if imp == m.path || strings.HasPrefix(imp, m.path+"/") {
				return path.Join(m.folder, strings.TrimPrefix(imp, m.path))
			}
		}
		return imp
	}
	lines, err := goList(dir, append([]string{"list", "-e", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}"}, patterns...)...)
	if err != nil {
		return nil, err
	}
	pkgs := imports{}
	for _, line := range lines {
		pkg, imps, _ := strings.Cut(line, "\t")
		var list []string
		for _, imp := range strings.Fields(imps) {
			list = append(list, folder(imp))
		}
		pkgs[folder(pkg)] = list
	}
	return pkgs, nil
}

func goList(dir string, args ...string) ([]string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v: %s", strings.Join(args[:2], " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n"), nil
}
