package main

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// slugger gives a page's headings their anchors as GitHub does (its
// github-slugger): the heading's text lowercased, every character that is
// not a letter, mark, number, connector (_), space or hyphen dropped, each
// space made a hyphen; a slug already given gets -1, -2, … in order.
type slugger struct {
	seen map[string]int
}

func newSlugger() *slugger { return &slugger{seen: map[string]int{}} }

// slug returns the anchor of the next heading whose text is text.
func (s *slugger) slug(text string) string {
	base := slugOf(text)
	result := base
	for {
		if _, taken := s.seen[result]; !taken {
			break
		}
		s.seen[base]++
		result = base + "-" + strconv.Itoa(s.seen[base])
	}
	s.seen[result] = 0
	return result
}

// slugOf is one heading's slug, before duplicates are told apart.
func slugOf(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	// headingLine is an ATX heading: up to three spaces, 1-6 '#', then a
	// space (or nothing).
	headingLine = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?[ \t]*$`)
	// closingHashes is an ATX heading's optional closing sequence.
	closingHashes = regexp.MustCompile(`(?:^|[ \t]+)#+[ \t]*$`)
	// inlineLink is [text](target) or ![alt](target) in a heading.
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
	// htmlID is an anchor an HTML element in the page sets itself.
	htmlID = regexp.MustCompile(`<[a-zA-Z][^>]*\s(?:id|name)\s*=\s*["']([^"']+)["']`)
)

// headingText is what GitHub renders of a heading's source: code spans
// without their backticks, links as their text, HTML tags dropped.
func headingText(src string) string {
	src = closingHashes.ReplaceAllString(src, "")
	src = inlineLink.ReplaceAllString(src, "$1")
	src = htmlTag.ReplaceAllString(src, "")
	return strings.ReplaceAll(src, "`", "")
}

// pageAnchors lists every anchor of a Markdown page: its headings' slugs
// (fenced code left out) and the ids its HTML elements set.
func pageAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	s := newSlugger()
	for _, blk := range blocks(md) {
		for _, line := range strings.Split(blk.text, "\n") {
			if m := headingLine.FindStringSubmatch(line); m != nil {
				anchors[s.slug(headingText(m[1]))] = true
			}
		}
		for _, m := range htmlID.FindAllStringSubmatch(blk.text, -1) {
			anchors[m[1]] = true
		}
	}
	return anchors
}
