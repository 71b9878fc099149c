// Package sse decodes a text/event-stream incrementally: bytes go in as
// they arrive, split anywhere (inside a line, a line ending or a multi-byte
// UTF-8 character), and complete events come out. It follows the WHATWG
// event-stream rules: a line ends in "\n", "\r\n" or "\r"; a line starting
// with ':' is a comment; the "data" lines of one event are joined with
// "\n"; a blank line ends the event; an event without data is not
// dispatched; a leading byte order mark is skipped. It does no I/O and knows
// nothing of what the data holds.
package sse

import (
	"bytes"
	"errors"
)

// DefaultMaxEventSize bounds the bytes one event may buffer when
// Decoder.MaxEventSize is zero.
const DefaultMaxEventSize = 16 << 20

// ErrEventTooLarge reports an event (or a line) longer than the decoder's
// limit; the stream is not one the decoder can follow.
var ErrEventTooLarge = errors.New("sse: event larger than the size limit")

// Event is one dispatched event.
type Event struct {
	// Type is the value of the event's last "event" field; "" when it had
	// none (the WHATWG default type "message").
	Type string
	// Data is the event's "data" lines joined with "\n". It is owned by the
	// Decoder and valid until the next call of Next, End or Feed.
	Data []byte
}

// Decoder is an incremental event-stream decoder. Feed it bytes, then call
// Next until it reports false; at the end of input, End returns an event
// the input left unterminated. The zero value is ready to use.
type Decoder struct {
	// MaxEventSize bounds the bytes of an unterminated line plus the data
	// of the event it belongs to; 0 means DefaultMaxEventSize.
	MaxEventSize int

	buf     []byte // bytes fed; buf[off:] are not yet consumed
	off     int
	name    []byte // the current event's type
	data    []byte // the current event's data lines, joined
	hasData bool   // the current event has a data line (data may be empty)
	skipLF  bool   // the last line ended in a '\r' that was the last byte fed
	bomDone bool   // the start of the stream was checked for a byte order mark
	err     error
}

var bom = []byte("\xEF\xBB\xBF")

// Feed adds bytes of the stream. The decoder copies them; p may be reused
// as soon as Feed returns. Call Next until it reports false before feeding
// more, or the limit check counts events that are already complete.
// Feed returns ErrEventTooLarge, and keeps returning it, once an event
// outgrows the limit.
func (d *Decoder) Feed(p []byte) error {
	if d.err != nil {
		return d.err
	}
	limit := d.MaxEventSize
	if limit <= 0 {
		limit = DefaultMaxEventSize
	}
	if len(d.buf)-d.off+len(d.data) > limit {
		d.err = ErrEventTooLarge
		return d.err
	}
	if d.off > 0 {
		n := copy(d.buf, d.buf[d.off:])
		d.buf = d.buf[:n]
		d.off = 0
	}
	if need := len(d.buf) + len(p); need > cap(d.buf) {
		// 1 KB more than needed, for the part of an event a read of the
		// same size leaves before the next: with append's growth, a
		// stream of full 4 KB reads allocated 4 KB and then 5 KB.
		d.buf = append(make([]byte, 0, need+1<<10), d.buf...)
	}
	d.buf = append(d.buf, p...)
	return nil
}

// Next returns the next complete event, or false when the bytes fed so far
// hold no further complete event.
func (d *Decoder) Next() (Event, bool) {
	if ev, ok := d.nextData(); ok {
		return ev, true
	}
	for {
		line, ok := d.nextLine()
		if !ok {
			return Event{}, false
		}
		if ev, ok := d.line(line); ok {
			return ev, true
		}
	}
}

// nextData takes, between events, the event nearly every server sends: a
// "data" line and the blank line after it, each ending in "\n", whole in
// the buffer. Its Data is then in the buffer, not copied; what it reads
// and the state it leaves are the line-by-line reading's.
func (d *Decoder) nextData() (Event, bool) {
	rest := d.buf[d.off:]
	if d.hasData || len(d.name) > 0 || d.skipLF || !d.bomDone || len(rest) < 7 || string(rest[:5]) != "data:" {
		return Event{}, false
	}
	n := bytes.IndexByte(rest, '\n')
	if n < 0 || n+1 >= len(rest) || rest[n+1] != '\n' || bytes.IndexByte(rest[:n], '\r') >= 0 {
		return Event{}, false
	}
	value := rest[5:n]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	d.off += n + 2
	return Event{Data: value}, true
}

// End ends the input: an unterminated last line counts as a line, and an
// event that never got its closing blank line is returned if it has data
// (the WHATWG rules discard such an event; a caller that wants that ignores
// it). Like Next, End hands out one event per call, complete ones first:
// call it until it reports false. Then the decoder starts afresh, keeping
// its limit.
func (d *Decoder) End() (Event, bool) {
	if d.err != nil {
		*d = Decoder{MaxEventSize: d.MaxEventSize}
		return Event{}, false
	}
	if ev, ok := d.Next(); ok {
		return ev, true
	}
	if rest := d.buf[d.off:]; len(rest) > 0 && (d.bomDone || !bytes.HasPrefix(bom, rest)) {
		d.off = len(d.buf)
		d.bomDone = true
		d.line(rest) // not blank, so it dispatches nothing by itself
	}
	var ev Event
	ok := d.hasData
	if ok {
		ev = d.dispatch()
	}
	// ev.Data keeps the old buffer alive; the fresh decoder allocates anew.
	*d = Decoder{MaxEventSize: d.MaxEventSize}
	return ev, ok
}

// nextLine cuts the next complete line from the buffer.
func (d *Decoder) nextLine() ([]byte, bool) {
	rest := d.buf[d.off:]
	if d.skipLF && len(rest) > 0 {
		d.skipLF = false
		if rest[0] == '\n' {
			d.off++
			rest = rest[1:]
		}
	}
	if !d.bomDone {
		if len(rest) < len(bom) && bytes.HasPrefix(bom, rest) {
			return nil, false
		}
		d.bomDone = true
		if bytes.HasPrefix(rest, bom) {
			d.off += len(bom)
			rest = rest[len(bom):]
		}
	}
	line, n, ok := CutLine(rest)
	if !ok {
		return nil, false
	}
	d.off += n
	if n == len(line)+1 && rest[len(line)] == '\r' && n == len(rest) {
		d.skipLF = true // a '\n' may follow in the next Feed
	}
	return line, true
}

// line interprets one line; it returns the event a blank line dispatches.
func (d *Decoder) line(line []byte) (Event, bool) {
	if len(line) == 0 {
		if !d.hasData {
			d.name = d.name[:0]
			return Event{}, false
		}
		return d.dispatch(), true
	}
	if line[0] == ':' {
		return Event{}, false
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		if d.hasData {
			d.data = append(d.data, '\n')
		} else {
			d.data = d.data[:0]
			d.hasData = true
		}
		d.data = append(d.data, value...)
	case "event":
		d.name = append(d.name[:0], value...)
	}
	// "id", "retry" and unknown fields do not matter to a proxy.
	return Event{}, false
}

func (d *Decoder) dispatch() Event {
	ev := Event{Data: d.data}
	if len(d.name) > 0 {
		ev.Type = string(d.name)
	}
	d.name = d.name[:0]
	d.hasData = false
	return ev
}

// CutLine finds the first line in b. It returns the line without its
// ending and n, the bytes the line and its ending take; ok is false when b
// holds no line ending yet. A '\r' that is the last byte of b ends a line:
// a '\n' after it, arriving later, is then a line of its own to a caller
// that does not remember the '\r' (Decoder does).
func CutLine(b []byte) (line []byte, n int, ok bool) {
	end := bytes.IndexByte(b, '\n')
	head := b
	if end >= 0 {
		head = b[:end]
	}
	if cr := bytes.IndexByte(head, '\r'); cr >= 0 {
		if cr+1 < len(b) && b[cr+1] == '\n' {
			return b[:cr], cr + 2, true
		}
		return b[:cr], cr + 1, true
	}
	if end < 0 {
		return nil, 0, false
	}
	return b[:end], end + 1, true
}
