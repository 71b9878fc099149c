package translate

// Decoding a Responses request: the scanner reads the usual shape in one
// pass, jsonv2 the rest and words the errors.

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// decodeResponses decodes a Responses request. Its raw values alias body.
// canonical reports that the scanner read it and found every string and
// every tool's parameters as jsonv2 writes them (no odd escape, compact,
// no repeated member name: canonical.go), so that the translation may
// copy them as they are without checking them again.
func decodeResponses(body []byte, req *responses.Request) (canonical bool, err error) {
	err = decodeWith(body, req, func(body []byte, req *responses.Request) bool {
		var ok bool
		ok, canonical = decodeResponsesFast(body, req, false)
		return ok
	})
	return canonical, err
}

// decodeResponsesFast decodes a Responses request with the scanner, as
// decodeRequestFast does a Messages request: one pass that validates the
// body and reads its members, items and parts, strings kept as slices of
// body. It gives up, reporting false, on anything whose result it is not
// sure matches jsonv2's exactly (null, a repeated member, an escaped member
// name, a member of an unexpected kind): the caller then decodes with
// jsonv2, which also words the error. canonical is what decodeResponses
// reports. With trustText, the text of strings is left unchecked
// (scanner.trustText): a body with a bad one may be taken.
func decodeResponsesFast(body []byte, req *responses.Request, trustText bool) (ok, canonical bool) {
	d := fastDecoder{sc: scanner{b: body, trustText: trustText}}
	if !d.responsesRequest(req) || d.sc.ws() != 0 || d.sc.i != len(d.sc.b) {
		*req = responses.Request{}
		return false, false
	}
	return true, !d.sc.odd
}

func (d *fastDecoder) responsesRequest(req *responses.Request) bool {
	return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "model":
			return true, d.strMember(&req.Model, k, mask, 0)
		case "input":
			if !seen(mask, 1) {
				return true, false
			}
			if k == '[' {
				return true, list(d, &req.Input.Items, 8, d.requestItem)
			}
			v, ok := d.raw()
			req.Input.Text = v
			return true, ok
		case "instructions":
			return true, d.rawMember(&req.Instructions, mask, 2)
		case "tool_choice":
			return true, d.rawMember(&req.ToolChoice, mask, 3)
		case "temperature":
			return true, d.rawMember(&req.Temperature, mask, 4)
		case "top_p":
			return true, d.rawMember(&req.TopP, mask, 5)
		case "user":
			return true, d.rawMember(&req.User, mask, 6)
		case "tools":
			return true, seen(mask, 7) && k == '[' && d.requestTools(&req.Tools)
		case "stream":
			return true, seen(mask, 8) && d.boolean(&req.Stream, k)
		case "parallel_tool_calls":
			req.ParallelToolCalls = new(bool)
			return true, seen(mask, 9) && d.boolean(req.ParallelToolCalls, k)
		case "max_output_tokens":
			var n int64
			if !seen(mask, 10) || !d.integer(&n) {
				return true, false
			}
			req.MaxOutputTokens = &n
			return true, true
		case "reasoning":
			r := new(responses.Reasoning)
			req.Reasoning = r
			return true, seen(mask, 11) && d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
				switch string(name) {
				case "effort":
					r.Effort = new(string)
					return true, d.strMember(r.Effort, k, mask, 0)
				case "summary":
					r.Summary = new(string)
					return true, d.strMember(r.Summary, k, mask, 1)
				}
				return false, false
			})
		case "text":
			t := new(responses.TextConfig)
			req.Text = t
			return true, seen(mask, 12) && d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
				if string(name) != "format" {
					return false, false
				}
				return true, d.rawMember(&t.Format, mask, 0)
			})
		case "previous_response_id":
			req.PreviousResponseID = new(string)
			return true, d.strMember(req.PreviousResponseID, k, mask, 13)
		}
		return false, false
	})
}

// responsesItem reads an input item.
func (d *fastDecoder) responsesItem(it *responses.Item) bool {
	return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "type":
			return true, d.strMember(&it.Type, k, mask, 0)
		case "id":
			return true, d.strMember(&it.ID, k, mask, 1)
		case "role":
			return true, d.strMember(&it.Role, k, mask, 2)
		case "call_id":
			return true, d.strMember(&it.CallID, k, mask, 3)
		case "name":
			return true, d.strMember(&it.Name, k, mask, 4)
		case "namespace":
			return true, d.strMember(&it.Namespace, k, mask, 5)
		case "content":
			return true, seen(mask, 6) && d.responsesContent(&it.Content, k)
		case "output":
			return true, seen(mask, 7) && d.responsesContent(&it.Output, k)
		case "arguments":
			return true, d.rawMember(&it.Arguments, mask, 8)
		case "input":
			return true, d.rawMember(&it.Input, mask, 9)
		case "summary":
			return true, seen(mask, 10) && k == '[' && d.responsesParts(&it.Summary)
		}
		return false, false
	})
}

// responsesContent reads a string or a list of parts
// (responses.Content); a value of another kind is kept raw.
func (d *fastDecoder) responsesContent(c *responses.Content, k byte) bool {
	if k == '[' {
		return d.responsesParts(&c.Parts)
	}
	v, ok := d.raw()
	c.Text = v
	return ok
}

func (d *fastDecoder) responsesParts(dst *[]responses.Part) bool {
	return list(d, dst, 2, d.responsesPart)
}

func (d *fastDecoder) responsesPart(p *responses.Part) bool {
	return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "text":
			return true, d.rawMember(&p.Text, mask, 0)
		case "type":
			return true, d.strMember(&p.Type, k, mask, 1)
		case "refusal":
			return true, d.strMember(&p.Refusal, k, mask, 2)
		case "image_url":
			return true, d.strMember(&p.ImageURL, k, mask, 3)
		case "file_id":
			return true, d.strMember(&p.FileID, k, mask, 4)
		case "detail":
			return true, d.strMember(&p.Detail, k, mask, 5)
		}
		return false, false
	})
}

// responsesTools reads a list of tools: size is the capacity it usually
// needs (a namespace holds a few).
func (d *fastDecoder) responsesTools(dst *[]responses.Tool, size int) bool {
	return list(d, dst, size, d.responsesTool)
}

func (d *fastDecoder) responsesTool(t *responses.Tool) bool {
	return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "type":
			return true, d.strMember(&t.Type, k, mask, 0)
		case "name":
			return true, d.strMember(&t.Name, k, mask, 1)
		case "description":
			return true, d.rawMember(&t.Description, mask, 2)
		case "parameters":
			return true, d.canonMember(&t.Parameters, mask, 3)
		case "format":
			f := new(responses.CustomFormat)
			t.Format = f
			return true, seen(mask, 4) && d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
				switch string(name) {
				case "type":
					return true, d.strMember(&f.Type, k, mask, 0)
				case "syntax":
					return true, d.strMember(&f.Syntax, k, mask, 1)
				case "definition":
					return true, d.rawMember(&f.Definition, mask, 2)
				}
				return false, false
			})
		case "tools":
			return true, seen(mask, 5) && k == '[' && d.responsesTools(&t.Tools, 4)
		}
		return false, false
	})
}

// canonMember keeps a member's value as it stands in the body, as
// rawMember does, and checks in the same pass that jsonv2 would write it
// so (canonValue): a value it would not sets the scanner's odd flag.
func (d *fastDecoder) canonMember(dst *jsontext.Value, mask *uint32, bit uint) bool {
	v, canonical, err := d.sc.canonValue()
	*dst = v
	d.sc.odd = d.sc.odd || !canonical
	return err == nil && seen(mask, bit)
}

// rawString is a raw value that must be a JSON string, member field of
// element i of list: it reports the string (quoted) when it is one, nil
// for null or absent, and an error naming list.i.field for another kind
// (the path is written only then: most requests have no error to word).
func rawString(v jsontext.Value, list string, i int, field string) (jsontext.Value, error) {
	switch v.Kind() {
	case '"':
		return v, nil
	case 'n', jsontext.KindInvalid:
		return nil, nil
	}
	return nil, invalidf("%s.%d.%s: must be a string, got %s", list, i, field, kindName(v.Kind()))
}

// prefixed puts where in front of a decode error's path.
func prefixed(where string, err error) error {
	if re, ok := err.(*RequestError); ok {
		return &RequestError{Msg: where + "." + re.Msg}
	}
	return err
}
