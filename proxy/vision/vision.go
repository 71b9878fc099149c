// Package vision lets a model that cannot read images see them through
// another's eyes (proxy_params.vision_fallback): it finds the images of a
// client's body (Messages, Chat or Responses), replaces each by the text
// of its description, and keeps the descriptions, by client and image, in
// a bounded cache. Asking the fallback model is the caller's business; the
// package does no I/O.
package vision

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
)

// Prompt is what the fallback model is asked about each image.
const Prompt = "Describe this image for someone who cannot see it, in at most 200 words: what it shows, and every piece of text, code, numbers or error message in it, exactly."

// MaxDescription bounds a description's length in bytes.
const MaxDescription = 4000

// Image is one image of a body.
type Image struct {
	// URL is the image as the fallback model gets it in a Chat request's
	// image_url: a data: URL for inline bytes, else the client's URL.
	URL  string
	Hash string // of URL: the image's identity
}

// Images lists the distinct images of a body, in order; none for a body
// that is not JSON.
func Images(body []byte) []Image {
	var out []Image
	seen := map[string]bool{}
	walk(jsontext.Value(body), func(obj jsontext.Value) (jsontext.Value, bool) {
		if u := imageURL(obj); u != "" {
			h := hash(u)
			if !seen[h] {
				seen[h] = true
				out = append(out, Image{URL: u, Hash: h})
			}
		}
		return nil, false
	})
	return out
}

// Replace returns body with each image whose hash descriptions holds
// replaced by a text block (or part) of the same format saying it is a
// description. Images without a description stay.
func Replace(body []byte, descriptions map[string]string) ([]byte, error) {
	out, changed := walk(jsontext.Value(body), func(obj jsontext.Value) (jsontext.Value, bool) {
		u := imageURL(obj)
		if u == "" {
			return nil, false
		}
		d, ok := descriptions[hash(u)]
		if !ok {
			return nil, false
		}
		textType := "text"
		if member(obj, "type") == "input_image" {
			textType = "input_text"
		}
		block, err := jsontext.AppendQuote(nil, "[Image description, written by another model: "+d+"]")
		if err != nil {
			return nil, false
		}
		return jsontext.Value(`{"type":"` + textType + `","text":` + string(block) + `}`), true
	})
	if !changed {
		return body, nil
	}
	return out, nil
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// imageURL returns the image of a content block or part as a URL: a
// Messages image (base64 or url source), a Chat image_url part, a
// Responses input_image; "" for anything else.
func imageURL(obj jsontext.Value) string {
	switch member(obj, "type") {
	case "image":
		src := raw(obj, "source")
		switch member(src, "type") {
		case "base64":
			mt, data := member(src, "media_type"), member(src, "data")
			if mt == "" || data == "" {
				return ""
			}
			return "data:" + mt + ";base64," + data
		case "url":
			return member(src, "url")
		}
	case "image_url":
		iu := raw(obj, "image_url")
		if iu.Kind() == '"' {
			return jsonquote.Unquote(iu)
		}
		return member(iu, "url")
	case "input_image":
		return member(obj, "image_url")
	}
	return ""
}

// walk rebuilds v with each object for which replace says so replaced
// (objects not replaced are walked into); changed says whether any was.
// A value that is not valid JSON is left as it is.
func walk(v jsontext.Value, replace func(obj jsontext.Value) (jsontext.Value, bool)) (jsontext.Value, bool) {
	switch v.Kind() {
	case '{':
		if r, ok := replace(v); ok {
			return r, true
		}
		return rebuild(v, '{', replace)
	case '[':
		return rebuild(v, '[', replace)
	}
	return v, false
}

func rebuild(v jsontext.Value, open byte, replace func(jsontext.Value) (jsontext.Value, bool)) (jsontext.Value, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if _, err := dec.ReadToken(); err != nil {
		return v, false
	}
	var b bytes.Buffer
	b.WriteByte(open)
	changed := false
	first := true
	for {
		k := dec.PeekKind()
		if k == '}' || k == ']' || k == 0 {
			break
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		if open == '{' {
			name, err := dec.ReadValue()
			if err != nil {
				return v, false
			}
			b.Write(name)
			b.WriteByte(':')
		}
		elem, err := dec.ReadValue()
		if err != nil {
			return v, false
		}
		out, c := walk(elem, replace)
		changed = changed || c
		b.Write(out)
	}
	if open == '{' {
		b.WriteByte('}')
	} else {
		b.WriteByte(']')
	}
	if !changed {
		return v, false
	}
	return b.Bytes(), true
}

// raw returns the member name of a JSON object, or nil.
func raw(obj jsontext.Value, name string) jsontext.Value {
	if obj.Kind() != '{' {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.ReadToken(); err != nil {
		return nil
	}
	for dec.PeekKind() == '"' {
		n, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		key := n.String() // valid until the next read
		v, err := dec.ReadValue()
		if err != nil {
			return nil
		}
		if key == name {
			return v.Clone()
		}
	}
	return nil
}

// member returns the string member name of a JSON object, or "".
func member(obj jsontext.Value, name string) string { return jsonquote.Unquote(raw(obj, name)) }

// Cache holds descriptions by client and image, the last used kept: a
// client's images are described for it alone. It is safe for concurrent
// use.
type Cache struct {
	max int

	mu      sync.Mutex
	order   *list.List // of *entry, most recently used first
	entries map[key]*list.Element
	flights map[key]*flight // descriptions being made
}

type flight struct {
	done        chan struct{}
	description string
	ok          bool
}

type key struct{ client, image string }

type entry struct {
	key         key
	description string
}

// NewCache returns a cache of at most max descriptions.
func NewCache(max int) *Cache {
	return &Cache{max: max, order: list.New(), entries: map[key]*list.Element{}, flights: map[key]*flight{}}
}

// Describe returns the description of image for client: the cached one,
// else describe's, kept when ok. Requests for an image being described
// wait for that description rather than ask again.
func (c *Cache) Describe(client, image string, describe func() (string, bool)) (string, bool) {
	if d, ok := c.Get(client, image); ok {
		return d, true
	}
	k := key{client, image}
	c.mu.Lock()
	if f, ok := c.flights[k]; ok {
		c.mu.Unlock()
		<-f.done
		return f.description, f.ok
	}
	f := &flight{done: make(chan struct{})}
	c.flights[k] = f
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.flights, k)
		c.mu.Unlock()
		close(f.done)
	}()
	f.description, f.ok = describe()
	if f.ok {
		c.Put(client, image, f.description)
		f.description, _ = c.Get(client, image) // as clipped
	}
	return f.description, f.ok
}

// Get returns the description of image for client.
func (c *Cache) Get(client, image string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key{client, image}]
	if !ok {
		return "", false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry).description, true
}

// Put keeps a description, clipped to MaxDescription, forgetting the
// least recently used beyond the bound.
func (c *Cache) Put(client, image, description string) {
	if len(description) > MaxDescription {
		description = strings.ToValidUTF8(description[:MaxDescription], "")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{client, image}
	if e, ok := c.entries[k]; ok {
		e.Value.(*entry).description = description
		c.order.MoveToFront(e)
		return
	}
	c.entries[k] = c.order.PushFront(&entry{key: k, description: description})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*entry).key)
	}
}

// Len is how many descriptions the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
