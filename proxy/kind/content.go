package kind

import (
	"bytes"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
)

// content is what a body's structure says of its kinds.
type content struct {
	textBytes  int // bytes of the strings of the prompt, images left out
	images     int
	thinking   bool
	tools      int // tools offered
	webTools   int // of which web search (a server tool)
	webForced  bool
	webToolSet map[string]bool // names of the web search tools, for tool_choice
}

// webSearch: the request exists to search the web: every tool it offers
// is a web search, or its tool_choice forces one. A coding client offers
// web search beside its other tools on every turn (Codex does); that is
// not a web search request.
func (c *content) webSearch() bool {
	return c.webForced || (c.tools > 0 && c.webTools == c.tools)
}

// readContent walks a Messages, Responses or Chat body. A body that is
// not JSON reads as nothing: the translation answers it.
func readContent(body []byte) content {
	var c content
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return c
	}
	var toolChoice jsontext.Value
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return c
		}
		switch name.String() {
		case "messages", "input", "system", "instructions":
			if c.walk(dec) != nil {
				return c
			}
		case "thinking": // Messages: {"type": "enabled" | "adaptive" | "disabled"}
			v, err := dec.ReadValue()
			if err != nil {
				return c
			}
			t := member(v, "type")
			c.thinking = c.thinking || (t != "" && t != "disabled")
		case "reasoning": // Responses: {"effort": ...}
			v, err := dec.ReadValue()
			if err != nil {
				return c
			}
			e := member(v, "effort")
			c.thinking = c.thinking || (e != "" && e != "none" && e != "minimal")
		case "reasoning_effort": // Chat
			v, err := dec.ReadValue()
			if err != nil {
				return c
			}
			e := jsonquote.Unquote(v)
			c.thinking = c.thinking || (e != "" && e != "none" && e != "minimal")
		case "tools":
			if c.readTools(dec) != nil {
				return c
			}
		case "tool_choice":
			v, err := dec.ReadValue()
			if err != nil {
				return c
			}
			toolChoice = v.Clone()
		default:
			if dec.SkipValue() != nil {
				return c
			}
		}
	}
	if toolChoice.Kind() == '{' {
		t := member(toolChoice, "type")
		c.webForced = isWebSearch(t) || (t == "tool" && c.webToolSet[member(toolChoice, "name")])
	}
	return c
}

// isWebSearch reports whether a tool type is a web search server tool:
// Messages' web_search_20250305 and later, Responses' web_search and
// web_search_preview.
func isWebSearch(typ string) bool { return strings.HasPrefix(typ, "web_search") }

func (c *content) readTools(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '[' {
		return dec.SkipValue()
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		c.tools++
		if isWebSearch(member(v, "type")) {
			c.webTools++
			if c.webToolSet == nil {
				c.webToolSet = map[string]bool{}
			}
			c.webToolSet[member(v, "name")] = true
		}
	}
	_, err := dec.ReadToken()
	return err
}

// walk reads one value of the prompt: it counts the bytes of its strings
// and its images (a content block or part whose type is image,
// input_image or image_url; their payload is not text).
func (c *content) walk(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		image := false
		for dec.PeekKind() == '"' {
			name, err := dec.ReadToken()
			if err != nil {
				return err
			}
			key := name.String()
			if image && (key == "source" || key == "image_url" || key == "data" || key == "url") {
				if err := dec.SkipValue(); err != nil {
					return err
				}
				continue
			}
			if key == "type" && dec.PeekKind() == '"' {
				v, err := dec.ReadToken()
				if err != nil {
					return err
				}
				switch v.String() {
				case "image", "input_image", "image_url":
					image = true
					c.images++
				}
				continue
			}
			if err := c.walk(dec); err != nil {
				return err
			}
		}
		_, err := dec.ReadToken()
		return err
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		for dec.PeekKind() != ']' && dec.PeekKind() != 0 {
			if err := c.walk(dec); err != nil {
				return err
			}
		}
		_, err := dec.ReadToken()
		return err
	case '"':
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		c.textBytes += len(v)
		return nil
	}
	return dec.SkipValue()
}

// member returns the string member name of a JSON object, or "".
func member(obj jsontext.Value, name string) string {
	if obj.Kind() != '{' {
		return ""
	}
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.ReadToken(); err != nil {
		return ""
	}
	for dec.PeekKind() == '"' {
		n, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		key := n.String() // the token is valid until the next read
		v, err := dec.ReadValue()
		if err != nil {
			return ""
		}
		if key == name {
			return jsonquote.Unquote(v)
		}
	}
	return ""
}
