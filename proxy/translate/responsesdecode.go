package translate

// Decoding a Responses request: the scanner reads the usual shape in one
// pass, jsonv2 the rest and words the errors.

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// decodeResponses decodes a Responses request. Its raw values alias body.
func decodeResponses(body []byte, req *responses.Request) error {
	return decodeWith(body, req, decodeResponsesFast)
}

// decodeResponsesFast decodes a Responses request with the scanner, as
// decodeRequestFast does a Messages request: one pass that validates the
// body and reads its members, items and parts, strings kept as slices of
// body. It gives up, reporting false, on anything whose result it is not
// sure matches jsonv2's exactly (null, a repeated member, an escaped member
// name, a member of an unexpected kind): the caller then decodes with
// jsonv2, which also words the error.
func decodeResponsesFast(body []byte, req *responses.Request) bool {
	d := fastDecoder{sc: scanner{b: body}}
	if !d.responsesRequest(req) || d.sc.ws() != 0 || d.sc.i != len(d.sc.b) {
		*req = responses.Request{}
		return false
	}
	return true
}

func (d *fastDecoder) responsesRequest(req *responses.Request) bool {
	var mask uint32
	return d.members(func(name []byte, k byte) bool {
		if k == 'n' {
			return false
		}
		switch string(name) {
		case "model":
			return seen(&mask, 0) && k == '"' && d.str(&req.Model)
		case "input":
			if !seen(&mask, 1) {
				return false
			}
			if k == '[' {
				return list(d, &req.Input.Items, 8, d.responsesItem)
			}
			v, ok := d.raw()
			req.Input.Text = v
			return ok
		case "instructions", "tool_choice", "temperature", "top_p", "user":
			dst, bit := &req.Instructions, uint(2)
			switch string(name) {
			case "tool_choice":
				dst, bit = &req.ToolChoice, 3
			case "temperature":
				dst, bit = &req.Temperature, 4
			case "top_p":
				dst, bit = &req.TopP, 5
			case "user":
				dst, bit = &req.User, 6
			}
			v, ok := d.raw()
			*dst = v
			return ok && seen(&mask, bit)
		case "tools":
			return seen(&mask, 7) && k == '[' && d.responsesTools(&req.Tools)
		case "parallel_tool_calls", "stream":
			if k != 't' && k != 'f' {
				return false
			}
			if string(name) == "stream" {
				req.Stream = k == 't'
				if !seen(&mask, 8) {
					return false
				}
			} else {
				req.ParallelToolCalls = new(k == 't')
				if !seen(&mask, 9) {
					return false
				}
			}
			_, ok := d.raw()
			return ok
		case "max_output_tokens":
			var n int64
			if !seen(&mask, 10) || !d.integer(&n) {
				return false
			}
			req.MaxOutputTokens = &n
			return true
		case "reasoning":
			r := new(responses.Reasoning)
			req.Reasoning = r
			return seen(&mask, 11) && d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
				switch string(name) {
				case "effort":
					r.Effort = new(string)
					return true, seen(mask, 0) && k == '"' && d.str(r.Effort)
				case "summary":
					r.Summary = new(string)
					return true, seen(mask, 1) && k == '"' && d.str(r.Summary)
				}
				return false, false
			})
		case "text":
			t := new(responses.TextConfig)
			req.Text = t
			return seen(&mask, 12) && d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
				if string(name) != "format" {
					return false, false
				}
				v, ok := d.raw()
				t.Format = v
				return true, ok && seen(mask, 0)
			})
		case "previous_response_id":
			req.PreviousResponseID = new(string)
			return seen(&mask, 13) && k == '"' && d.str(req.PreviousResponseID)
		}
		_, ok := d.raw()
		return ok
	})
}

// responsesItem reads an input item.
func (d *fastDecoder) responsesItem(it *responses.Item) bool {
	if d.sc.ws() != '{' {
		return false
	}
	var mask uint32
	return d.members(func(name []byte, k byte) bool {
		if k == 'n' {
			return false
		}
		switch string(name) {
		case "type", "id", "role", "call_id", "name", "namespace":
			dst, bit := &it.Type, uint(0)
			switch string(name) {
			case "id":
				dst, bit = &it.ID, 1
			case "role":
				dst, bit = &it.Role, 2
			case "call_id":
				dst, bit = &it.CallID, 3
			case "name":
				dst, bit = &it.Name, 4
			case "namespace":
				dst, bit = &it.Namespace, 5
			}
			return seen(&mask, bit) && k == '"' && d.str(dst)
		case "content":
			return seen(&mask, 6) && d.responsesContent(&it.Content, k)
		case "output":
			return seen(&mask, 7) && d.responsesContent(&it.Output, k)
		case "arguments", "input":
			dst, bit := &it.Arguments, uint(8)
			if string(name) == "input" {
				dst, bit = &it.Input, 9
			}
			v, ok := d.raw()
			*dst = v
			return ok && seen(&mask, bit)
		case "summary":
			return seen(&mask, 10) && k == '[' && d.responsesParts(&it.Summary)
		}
		_, ok := d.raw()
		return ok
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
			v, ok := d.raw()
			p.Text = v
			return true, ok && seen(mask, 0)
		case "type", "refusal", "image_url", "file_id", "detail":
			dst, bit := &p.Type, uint(1)
			switch string(name) {
			case "refusal":
				dst, bit = &p.Refusal, 2
			case "image_url":
				dst, bit = &p.ImageURL, 3
			case "file_id":
				dst, bit = &p.FileID, 4
			case "detail":
				dst, bit = &p.Detail, 5
			}
			return true, seen(mask, bit) && k == '"' && d.str(dst)
		}
		return false, false
	})
}

func (d *fastDecoder) responsesTools(dst *[]responses.Tool) bool {
	return list(d, dst, 16, d.responsesTool)
}

func (d *fastDecoder) responsesTool(t *responses.Tool) bool {
	return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "type":
			return true, seen(mask, 0) && k == '"' && d.str(&t.Type)
		case "name":
			return true, seen(mask, 1) && k == '"' && d.str(&t.Name)
		case "description", "parameters":
			dst, bit := &t.Description, uint(2)
			if string(name) == "parameters" {
				dst, bit = &t.Parameters, 3
			}
			v, ok := d.raw()
			*dst = v
			return true, ok && seen(mask, bit)
		case "format":
			f := new(responses.CustomFormat)
			t.Format = f
			return true, seen(mask, 4) && d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
				switch string(name) {
				case "type":
					return true, seen(mask, 0) && k == '"' && d.str(&f.Type)
				case "syntax":
					return true, seen(mask, 1) && k == '"' && d.str(&f.Syntax)
				case "definition":
					v, ok := d.raw()
					f.Definition = v
					return true, ok && seen(mask, 2)
				}
				return false, false
			})
		case "tools":
			return true, seen(mask, 5) && k == '[' && d.responsesTools(&t.Tools)
		}
		return false, false
	})
}

// rawString is a raw value that must be a JSON string: it reports the
// string (quoted) when it is one, nil for null or absent, and an error
// naming where for another kind.
func rawString(v jsontext.Value, where string) (jsontext.Value, error) {
	switch v.Kind() {
	case '"':
		return v, nil
	case 'n', jsontext.KindInvalid:
		return nil, nil
	}
	return nil, invalidf("%s: must be a string, got %s", where, kindName(v.Kind()))
}

// prefixed puts where in front of a decode error's path.
func prefixed(where string, err error) error {
	if re, ok := err.(*RequestError); ok {
		return &RequestError{Msg: where + "." + re.Msg}
	}
	return err
}
