package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// object is a JSON object whose values stay raw and whose keys keep their
// order, so that a merge changes only what it means to change.
type object struct {
	keys   []string
	values map[string]json.RawMessage
}

// parseObject reads one JSON object and nothing after it. null and empty
// input are an empty object.
func parseObject(data []byte) (*object, error) {
	obj := &object{values: map[string]json.RawMessage{}}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return obj, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	for dec.More() {
		if err := obj.decodeMember(dec); err != nil {
			return nil, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the object")
	}
	return obj, nil
}

func (o *object) decodeMember(dec *json.Decoder) error {
	token, err := dec.Token()
	if err != nil {
		return err
	}
	key, _ := token.(string) // inside an object the decoder yields only string keys
	var value json.RawMessage
	if err := dec.Decode(&value); err != nil {
		return err
	}
	o.set(key, value)
	return nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	token, err := dec.Token()
	if err != nil {
		return err
	}
	if token != want {
		return fmt.Errorf("found %v where %q belongs", token, want)
	}
	return nil
}

func (o *object) get(key string) json.RawMessage {
	return o.values[key]
}

// set replaces the value of key in place, or appends key.
func (o *object) set(key string, value json.RawMessage) {
	if _, ok := o.values[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.values[key] = value
}

// compact is the object as JSON, keys in order, values byte for byte.
func (o *object) compact() json.RawMessage {
	members := make([][]byte, len(o.keys))
	for i, key := range o.keys {
		members[i] = append(append(marshalPlain(key), ':'), o.values[key]...)
	}
	return joinJSON('{', '}', members)
}

func joinJSON(open, close byte, parts [][]byte) json.RawMessage {
	joined := append([]byte{open}, bytes.Join(parts, []byte(","))...)
	return append(joined, close)
}
