package main

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// block is a run of non-blank lines outside fenced code: a Markdown
// paragraph, list, table or heading, where a code span may wrap lines.
type block struct {
	line int // the first line's number, from 1
	text string
}

var fence = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")

// blocks splits a page into its blocks, leaving fenced code out.
func blocks(md string) []block {
	var out []block
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, block{line: start, text: strings.Join(cur, "\n")})
			cur = nil
		}
	}
	open := "" // the fence of the code block we are in
	for i, line := range strings.Split(md, "\n") {
		if open != "" {
			if m := fence.FindStringSubmatch(line); m != nil && m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line[len(m[0]):]) == "" {
				open = ""
			}
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			flush()
			open = m[1]
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if len(cur) == 0 {
			start = i + 1
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// blankCodeSpans replaces each code span (a run of n backticks to the
// next run of exactly n) by spaces, newlines kept, so that offsets stay.
func blankCodeSpans(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := backticks(b, i)
		end := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := backticks(b, j)
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 {
			i += n // no closing run: the backticks are literal
			continue
		}
		for k := i; k < end; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = end
	}
	return string(b)
}

// backticks is the length of the run of backticks at b[i:].
func backticks(b []byte, i int) int {
	n := 0
	for i+n < len(b) && b[i+n] == '`' {
		n++
	}
	return n
}

var (
	// linkTarget is the (target) of [text](target) or ![alt](target),
	// with an optional title.
	linkTarget = regexp.MustCompile(`\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// refDefinition is a reference link's definition: [label]: target.
	refDefinition = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*(<[^>\n]*>|\S+)`)
	// htmlRef is an href or src attribute.
	htmlRef = regexp.MustCompile(`<[a-zA-Z][^>]*\s(?:href|src)\s*=\s*["']([^"']+)["']`)
	// scheme opens an absolute URL (https:, mailto:, …).
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// link is one link of a page.
type link struct {
	line   int
	target string
}

// pageLinks lists the links of a page outside code.
func pageLinks(md string) []link {
	var links []link
	for _, blk := range blocks(md) {
		text := blankCodeSpans(blk.text)
		for _, re := range []*regexp.Regexp{linkTarget, refDefinition, htmlRef} {
			for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
				target := strings.TrimSuffix(strings.TrimPrefix(text[m[2]:m[3]], "<"), ">")
				links = append(links, link{line: blk.line + strings.Count(text[:m[2]], "\n"), target: target})
			}
		}
	}
	sort.SliceStable(links, func(i, j int) bool { return links[i].line < links[j].line })
	return links
}

// docPages are the pages whose links are checked: README.md and every
// Markdown page under docs/.
func docPages(files []tracked) []string {
	var pages []string
	for _, f := range files {
		if f.Path == "README.md" || (strings.HasPrefix(f.Path, "docs/") && strings.HasSuffix(f.Path, ".md")) {
			pages = append(pages, f.Path)
		}
	}
	return pages
}

// checkDocLinks checks every relative link of the doc pages: its file or
// folder is tracked, and its #anchor is one of the Markdown page it
// points into (the same page for a bare #anchor).
func checkDocLinks(dir string, files []tracked) ([]string, error) {
	isFile := map[string]bool{}
	isDir := map[string]bool{"": true}
	for _, f := range files {
		isFile[f.Path] = true
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			isDir[d] = true
		}
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(page string) (map[string]bool, error) {
		if a, ok := anchorsOf[page]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(page)))
		if err != nil {
			return nil, err
		}
		anchorsOf[page] = pageAnchors(string(b))
		return anchorsOf[page], nil
	}
	var findings []string
	for _, page := range docPages(files) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(page)))
		if err != nil {
			return nil, fmt.Errorf("read %s: %v", page, err)
		}
		for _, l := range pageLinks(string(b)) {
			if msg := checkLink(page, l.target, isFile, isDir, anchors); msg != "" {
				findings = append(findings, fmt.Sprintf("%s:%d: link %q: %s", page, l.line, l.target, msg))
			}
		}
	}
	return findings, nil
}

// checkLink says what is wrong with one link of page, or "".
func checkLink(page, target string, isFile, isDir map[string]bool, anchors func(string) (map[string]bool, error)) string {
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // absolute: not this repository's to check
	}
	rawPath, fragment, hasFragment := strings.Cut(target, "#")
	rawPath, _, _ = strings.Cut(rawPath, "?")
	p, err := url.PathUnescape(rawPath)
	if err != nil {
		return "not a valid URL path: " + err.Error()
	}
	dest := page // a bare #anchor points into the page itself
	if p != "" {
		if strings.HasPrefix(p, "/") {
			dest = path.Clean(strings.TrimPrefix(p, "/"))
		} else {
			dest = path.Join(path.Dir(page), p)
		}
		if dest == "." {
			dest = ""
		}
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return "points outside the repository"
		}
		if !isFile[dest] && !isDir[dest] {
			return fmt.Sprintf("%s is not a tracked file or folder", dest)
		}
	}
	if !hasFragment || !strings.HasSuffix(dest, ".md") || !isFile[dest] {
		return "" // no anchor, or one into a file GitHub anchors otherwise (#L12)
	}
	anchor, err := url.PathUnescape(fragment)
	if err != nil {
		return "not a valid anchor: " + err.Error()
	}
	a, err := anchors(dest)
	if err != nil {
		return "cannot read it: " + err.Error()
	}
	if !a[anchor] {
		return fmt.Sprintf("%s has no heading with the anchor #%s", dest, anchor)
	}
	return ""
}
