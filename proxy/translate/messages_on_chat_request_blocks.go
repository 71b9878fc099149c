package translate

// The content blocks of a Messages request as parts of Chat messages, and
// the raw JSON string helpers they use.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/websearch"
)

// Escaped JSON string fragments, joined into strings in their raw form.
var (
	sepPara     = []byte(`\n\n`)
	sepLine     = []byte(`\n`)
	sysOpen     = []byte(`<system>\n`)
	sysClose    = []byte(`\n</system>`)
	errorPrefix = []byte(`Error: `)
	dataPrefix  = []byte(`data:`)
	base64Infix = []byte(`;base64,`)

	imagePlaceholder = []byte(ImagePlaceholder)
)

const billingPrefix = "x-anthropic-billing-header:"

// isBillingBlock reports whether blk, block i of the top-level system
// prompt, is the client's billing header: a first text block starting with
// billingPrefix. It changes on every request and would defeat the
// backend's prefix cache, so no backend receives it, translated or not.
func isBillingBlock(i int, blk *messages.Block) bool {
	return i == 0 && blk.Type == "text" && rawHasPrefix(blk.Text, billingPrefix)
}

// textBlock appends the text block messages[i].content[j] to parts; an
// empty text is skipped.
func (b *builder) textBlock(parts []part, blk *messages.Block, i, j int) ([]part, error) {
	in, ok := textOf(blk.Text)
	if !ok {
		return parts, invalidf("messages.%d.content.%d.text: must be a string", i, j)
	}
	if len(in) == 0 {
		return parts, nil
	}
	b.est.escaped(in)
	return append(parts, part{segs: [][]byte{in}}), nil
}

// toolResult pushes the tool message of a tool_result block and returns
// the images it holds (a tool message can't carry them).
func (b *builder) toolResult(blk *messages.Block, i, j int) ([]part, error) {
	if blk.ToolUseID == "" {
		return nil, invalidf("messages.%d.content.%d.tool_use_id: required", i, j)
	}
	if _, ok := b.toolIDs[blk.ToolUseID]; !ok {
		return nil, invalidf("messages.%d.content.%d: tool_result names tool_use_id %q that no earlier tool_use has", i, j, blk.ToolUseID)
	}
	b.est.toolResult()
	var segs [][]byte
	if blk.IsError {
		segs = append(segs, errorPrefix)
	}
	var images []part
	if c := blk.Content; c != nil {
		if c.Text != nil {
			if in := inner(c.Text); len(in) > 0 {
				segs = append(segs, in)
				b.est.escaped(in)
			}
		}
		texts := 0
		for k := range c.Blocks {
			cb := &c.Blocks[k]
			var add [][]byte
			switch cb.Type {
			case "text":
				in, ok := textOf(cb.Text)
				if !ok {
					return nil, invalidf("messages.%d.content.%d.content.%d.text: must be a string", i, j, k)
				}
				if len(in) > 0 {
					add = [][]byte{in}
					b.est.escaped(in)
				}
			case "image":
				p, err := b.image(cb.Source, fmt.Sprintf("messages.%d.content.%d.content.%d", i, j, k))
				if err != nil {
					return nil, err
				}
				if !p.image { // its placeholder: text of the result
					add = p.segs
					break
				}
				images = append(images, p)
			case "document":
				ps, err := b.document(cb.Source, fmt.Sprintf("messages.%d.content.%d.content.%d", i, j, k))
				if err != nil {
					return nil, err
				}
				for n, p := range ps {
					if n > 0 {
						add = append(add, sepLine)
					}
					add = append(add, p.segs...)
				}
			case "tool_reference":
				add = b.toolReference(cb.ToolName)
			}
			if len(add) > 0 {
				if texts > 0 {
					segs = append(segs, sepLine)
				}
				texts++
				segs = append(segs, add...)
			}
		}
	}
	b.push(chatMsg{role: "tool", str: true, callID: blk.ToolUseID, parts: []part{{segs: segs}}})
	return images, nil
}

// toolReference renders a tool_reference (the client's ToolSearch found
// the tool, and its next request offers it) as text the model can act
// on: the tool's name, that it can now be called, and its description
// when the request carries the tool.
func (b *builder) toolReference(name string) [][]byte {
	if name == "" {
		return nil
	}
	segs := [][]byte{quoteInner("Tool " + name + " is now available: call it by that name.")}
	for i := range b.tools {
		if t := &b.tools[i]; t.Name == name && t.Description.Kind() == '"' && len(t.Description) > 2 {
			segs = append(segs, quoteInner(" Its description: "), inner(t.Description))
			break
		}
	}
	for _, s := range segs {
		b.est.escaped(s)
	}
	return segs
}

// webSearchResult pushes a web_search_tool_result of the history as the
// result of its call (a tool message): the results read back from their
// encrypted_content, as the model read them when it searched.
func (b *builder) webSearchResult(blk *messages.Block, query string) {
	call := SearchCall{Query: query, Code: websearch.Unavailable}
	if c := blk.Content; c != nil && c.Blocks != nil {
		call.Code = ""
		for k := range c.Blocks {
			r := &c.Blocks[k]
			if r.Type != "web_search_result" {
				continue
			}
			res, ok := ReadEncryptedContent(r.EncryptedContent)
			if !ok {
				res = websearch.Result{URL: r.URL, Title: r.Title, PageAge: r.PageAge}
			}
			call.Results = append(call.Results, res)
		}
	}
	text := quoteInner(SearchResultText(&call))
	b.est.escaped(text)
	b.push(chatMsg{role: "tool", str: true, callID: blk.ToolUseID, parts: []part{{segs: [][]byte{text}}}})
}

func (b *builder) image(src *messages.Source, at string) (part, error) {
	if src == nil {
		return part{}, invalidf("%s.source: required", at)
	}
	if b.target.NoVision {
		b.est.escaped(imagePlaceholder)
		return part{segs: [][]byte{imagePlaceholder}}, nil
	}
	b.est.image()
	switch src.Type {
	case "base64":
		if src.MediaType == "" {
			return part{}, invalidf("%s.source.media_type: required", at)
		}
		data, err := base64Of(src.Data)
		if err != nil {
			return part{}, invalidf("%s.source.data: %v", at, err)
		}
		return part{image: true, segs: [][]byte{dataPrefix, quoteInner(src.MediaType), base64Infix, data}}, nil
	case "url":
		if src.URL.Kind() != '"' || len(src.URL) <= 2 {
			return part{}, invalidf("%s.source.url: must be a non-empty string", at)
		}
		return part{image: true, segs: [][]byte{inner(src.URL)}}, nil
	case "file":
		return part{}, invalidf("%s.source: file sources (file_id) can't be read by this backend; send the image as base64 or url", at)
	}
	return part{}, invalidf("%s.source.type: must be \"base64\" or \"url\", got %q", at, src.Type)
}

// document turns a document block into text parts; only text the proxy
// can read passes (a text source, content blocks, base64 text/plain).
func (b *builder) document(src *messages.Source, at string) ([]part, error) {
	if src == nil {
		return nil, invalidf("%s.source: required", at)
	}
	switch src.Type {
	case "text":
		if src.Data.Kind() != '"' {
			return nil, invalidf("%s.source.data: must be a string", at)
		}
		in := inner(src.Data)
		if len(in) == 0 {
			return nil, nil
		}
		b.est.escaped(in)
		return []part{{segs: [][]byte{in}}}, nil
	case "content":
		var ps []part
		if c := src.Content; c != nil {
			if c.Text != nil {
				if in := inner(c.Text); len(in) > 0 {
					ps = append(ps, part{segs: [][]byte{in}})
					b.est.escaped(in)
				}
			}
			for k := range c.Blocks {
				if c.Blocks[k].Type != "text" {
					continue
				}
				in, ok := textOf(c.Blocks[k].Text)
				if !ok {
					return nil, invalidf("%s.source.content.%d.text: must be a string", at, k)
				}
				if len(in) > 0 {
					ps = append(ps, part{segs: [][]byte{in}})
					b.est.escaped(in)
				}
			}
		}
		return ps, nil
	case "base64":
		if strings.HasPrefix(src.MediaType, "text/") {
			data, err := base64Of(src.Data)
			if err != nil {
				return nil, invalidf("%s.source.data: %v", at, err)
			}
			raw, err := base64.StdEncoding.DecodeString(string(data))
			if err != nil {
				return nil, invalidf("%s.source.data: invalid base64", at)
			}
			q, err := jsontext.AppendQuote(nil, raw)
			if err != nil {
				return nil, invalidf("%s.source.data: the document is not valid UTF-8 text", at)
			}
			b.est.escaped(q[1 : len(q)-1])
			return []part{{segs: [][]byte{q[1 : len(q)-1]}}}, nil
		}
		if src.MediaType == "application/pdf" {
			return nil, invalidf("%s: PDF documents can't be read by this backend; send the document's text instead", at)
		}
		return nil, invalidf("%s: documents of type %q can't be read by this backend; send the document's text instead", at, src.MediaType)
	case "url":
		return nil, invalidf("%s: documents by URL (PDF) can't be read by this backend; send the document's text instead", at)
	case "file":
		return nil, invalidf("%s: file sources (file_id) can't be read by this backend; send the document's text instead", at)
	}
	return nil, invalidf("%s.source.type: must be \"text\", \"content\" or \"base64\", got %q", at, src.Type)
}

// base64Of checks that the raw JSON string v holds standard base64 (padded,
// no whitespace) and returns its inside.
func base64Of(v []byte) ([]byte, error) {
	if jsontext.Value(v).Kind() != '"' {
		return nil, errors.New("must be a base64 string")
	}
	data := inner(v)
	if bytes.IndexByte(data, '\\') >= 0 { // escaped, e.g. "\/"
		u, err := jsontext.AppendUnquote(nil, v)
		if err != nil {
			return nil, err
		}
		data = u
	}
	if len(data) == 0 {
		return nil, errors.New("empty base64 data")
	}
	if !validBase64(data) {
		return nil, errors.New("invalid base64 data")
	}
	return data, nil
}

func validBase64(s []byte) bool {
	if len(s)%4 != 0 {
		return false
	}
	n := len(s)
	if s[n-1] == '=' {
		n--
		if s[n-1] == '=' {
			n--
		}
	}
	for _, c := range s[:n] {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}
