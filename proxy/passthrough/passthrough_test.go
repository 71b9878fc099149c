package passthrough

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

const backendModel = "org/backend-model-7b"

func resolve(alias string) (translate.Target, error) {
	return translate.Target{Alias: alias, BackendModel: backendModel, SupportsSystemMessage: true}, nil
}

// chunked hands out body in the chunks given by cuts (offsets), then in
// random chunks of 1..max bytes.
type chunked struct {
	b    []byte
	cuts []int
	at   int
	rnd  *rand.Rand
	max  int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.at >= len(c.b) {
		return 0, io.EOF
	}
	end := len(c.b)
	for _, x := range c.cuts {
		if x > c.at {
			end = min(end, x)
			break
		}
	}
	if c.rnd != nil {
		end = min(end, c.at+1+c.rnd.IntN(c.max))
	}
	n := copy(p, c.b[c.at:end])
	c.at += n
	return n, nil
}

// forward runs a body through Start and Body and returns what the backend
// would get.
func forward(t *testing.T, src io.Reader, contentLength int64) ([]byte, int64, error) {
	t.Helper()
	r, err := Start(src, contentLength)
	if err != nil {
		return nil, 0, err
	}
	if r.Model != "claude-opus-5-5" {
		t.Fatalf("model %q", r.Model)
	}
	rd, size := r.Body(backendModel), r.Size(backendModel)
	out, err := io.ReadAll(rd)
	if err == nil && r.Err() != nil {
		t.Fatalf("Err %v after a clean read", r.Err())
	}
	return out, size, err
}

// want is what translate.ChatToChat sends the backend for body.
func want(t *testing.T, body string) []byte {
	t.Helper()
	br, err := translate.ChatToChat([]byte(body), resolve)
	if err != nil {
		t.Fatalf("ChatToChat: %v", err)
	}
	out := append([]byte(nil), br.Body...)
	bufpool.Put(br.Body)
	return out
}

var bodies = map[string]string{
	"model first": `{"model": "claude-opus-5-5", "messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"h\u00e9llo \"there\""}]}],"max_tokens":64,"tools":[{"type":"function","function":{"name":"Bash","parameters":{"type":"object"}}}],"stream":true}`,
	"model last": `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}], "stream": false, "temperature": 0.5,
  "model" : "claude-opus-5-5"
}`,
	"model middle": `{"stream":true,"model":"claude-opus-5-5","messages":[{"role":"user","content":"hi"}]}`,
	// Over SmallBody: forwarded while it arrives even with its length known.
	"large, model after a message": `{"messages":[{"role":"user","content":"` + strings.Repeat("long ", 4<<10) + `"}],"model":"claude-opus-5-5","stream":true,"messages_after":[1,2]}`,
}

// TestSplitAtEveryByteOfModel: the body cut at every byte boundary in and
// around the model member, the rest in random chunks, gives the backend
// the same request as translate.ChatToChat on the whole body.
func TestSplitAtEveryByteOfModel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for name, body := range bodies {
		exp := want(t, body)
		i := strings.Index(body, `"model"`)
		j := strings.Index(body[i:], `5"`) + i + 2
		for cut := max(0, i-2); cut <= min(len(body), j+2); cut++ {
			// Length known (a small body: validated whole by Start) and
			// unknown (forwarded while it arrives).
			for _, cl := range []int64{int64(len(body)), -1} {
				for _, maxChunk := range []int{1, 7, 4096} {
					src := &chunked{b: []byte(body), cuts: []int{cut}, rnd: rnd, max: maxChunk}
					got, size, err := forward(t, src, cl)
					if err != nil {
						t.Fatalf("%s, cut at %d: %v", name, cut, err)
					}
					if !bytes.Equal(got, exp) {
						t.Fatalf("%s, cut at %d:\n got %s\nwant %s", name, cut, got, exp)
					}
					if cl >= 0 && size != int64(len(exp)) || cl < 0 && size != -1 {
						t.Fatalf("%s: announced size %d, body %d bytes", name, size, len(got))
					}
				}
			}
		}
	}
}

// TestModelLast: with model last, Start has read the whole body, and Body
// still rewrites model in place.
func TestModelLast(t *testing.T) {
	body := bodies["model last"]
	r, err := Start(strings.NewReader(body), -1)
	if err != nil {
		t.Fatal(err)
	}
	rd, size := r.Body(backendModel), r.Size(backendModel)
	if size != -1 {
		t.Fatalf("size %d for an unknown length", size)
	}
	got, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	if exp := want(t, body); !bytes.Equal(got, exp) {
		t.Fatalf("got %s\nwant %s", got, exp)
	}
	if done, stream, _ := r.Finished(); !done || stream {
		t.Fatalf("Finished() = %v, %v; want true, false", done, stream)
	}
}

// TestMalformed: a body found malformed after model is never handed out
// whole (its last byte is withheld), and the error is a RequestError; one
// malformed before model fails Start.
func TestMalformed(t *testing.T) {
	after := map[string]string{
		"truncated":         `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"hi"}]`,
		"trailing garbage":  `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"hi"}]} x`,
		"two objects":       `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"hi"}]}{}`,
		"bad literal":       `{"model":"claude-opus-5-5","messages":[{"role":"user","content":tru}]}`,
		"empty messages":    `{"model":"claude-opus-5-5","messages":[]}`,
		"no messages":       `{"model":"claude-opus-5-5","temperature":1}`,
		"message not obj":   `{"model":"claude-opus-5-5","messages":["hi"]}`,
		"role not string":   `{"model":"claude-opus-5-5","messages":[{"role":1}]}`,
		"stream not bool":   `{"model":"claude-opus-5-5","messages":[{"role":"user"}],"stream":"yes"}`,
		"max_tokens string": `{"model":"claude-opus-5-5","messages":[{"role":"user"}],"max_tokens":"5"}`,
		"max_tokens zero":   `{"model":"claude-opus-5-5","messages":[{"role":"user"}],"max_tokens":0}`,
		"max_tokens 1.5":    `{"model":"claude-opus-5-5","messages":[{"role":"user"}],"max_tokens":1.5}`,
		"duplicate member":  `{"model":"claude-opus-5-5","messages":[{"role":"user"}],"stream":true,"stream":false}`,
		"bad utf-8":         "{\"model\":\"claude-opus-5-5\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
	}
	for name, body := range after {
		for _, maxChunk := range []int{1, 3, 1 << 20} {
			src := &chunked{b: []byte(body), rnd: rand.New(rand.NewPCG(3, 4)), max: maxChunk}
			r, err := Start(src, -1)
			if err != nil {
				t.Fatalf("%s: Start: %v (the malformation comes after model)", name, err)
			}
			got, err := io.ReadAll(r.Body("m"))
			var re *translate.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%s: read error %v, want a RequestError", name, err)
			}
			if !errors.As(r.Err(), &re) {
				t.Fatalf("%s: Err() = %v", name, r.Err())
			}
			if full := strings.Replace(body, `"claude-opus-5-5"`, `"m"`, 1); len(got) >= len(full) {
				t.Fatalf("%s: the whole malformed body was handed out: %q", name, got)
			}
		}
	}
	before := []string{``, `[]`, `{"messages":[]`, `{"model":5,"messages":[]}`, `{"temperature":1}`, `{"model":"claude-opus-5-5"`[:10], `{"stream":"x","model":"claude-opus-5-5"}`}
	for _, body := range before {
		_, err := Start(strings.NewReader(body), -1)
		var re *translate.RequestError
		if !errors.As(err, &re) {
			t.Fatalf("%q: Start error %v, want a RequestError", body, err)
		}
	}
	// A small body is read and validated whole by Start: nothing of it
	// goes anywhere.
	for name, body := range after {
		if _, err := Start(strings.NewReader(body), int64(len(body))); err == nil {
			t.Fatalf("%s: Start with the whole body read: no error", name)
		}
	}
}

// TestWhole gives back the body unchanged, whatever Start read ahead.
func TestWhole(t *testing.T) {
	for name, body := range bodies {
		r, err := Start(&chunked{b: []byte(body), rnd: rand.New(rand.NewPCG(5, 6)), max: 5}, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Whole()
		if err != nil || string(got) != body {
			t.Fatalf("%s: Whole() = %q, %v", name, got, err)
		}
	}
}

// TestReadError: the client's read error is returned as it is, not as a
// malformation.
func TestReadError(t *testing.T) {
	gone := errors.New("client gone")
	src := io.MultiReader(strings.NewReader(`{"model":"claude-opus-5-5","messages":[`), errReader{gone})
	r, err := Start(src, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r.Body("m")); !errors.Is(err, gone) {
		t.Fatalf("read error %v, want %v", err, gone)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestRetryFromTheStart: a second reader (another attempt, another
// backend model) hands out the whole body from its start, whatever the
// first read of it, and the first reader is cut off.
func TestRetryFromTheStart(t *testing.T) {
	body := bodies["model first"]
	for _, firstRead := range []int{0, 5, 40, len(body) - 10} {
		r, err := Start(&chunked{b: []byte(body), rnd: rand.New(rand.NewPCG(7, 8)), max: 9}, -1)
		if err != nil {
			t.Fatal(err)
		}
		first := r.Body("first/model")
		if _, err := io.ReadFull(first, make([]byte, firstRead)); err != nil {
			t.Fatalf("first read of %d: %v", firstRead, err)
		}
		got, err := io.ReadAll(r.Body(backendModel))
		if err != nil {
			t.Fatal(err)
		}
		if exp := want(t, body); !bytes.Equal(got, exp) {
			t.Fatalf("after %d bytes to the first attempt:\n got %s\nwant %s", firstRead, got, exp)
		}
		if _, err := first.Read(make([]byte, 8)); !errors.Is(err, errSuperseded) {
			t.Fatalf("the first reader read on: %v", err)
		}
		if done, stream, maxTokens := r.Finished(); !done || !stream || maxTokens != 64 {
			t.Fatalf("Finished() = %v, %v, %d; want true, true, 64", done, stream, maxTokens)
		}
	}
}

// TestReleaseLetsTheBodyGo: after Release the reader goes on, what it
// handed out is let go, and no new attempt can start.
func TestReleaseLetsTheBodyGo(t *testing.T) {
	body := `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"` + strings.Repeat("z", 1<<20) + `"},{"role":"user","content":"` + strings.Repeat("w", 1<<20) + `"}]}`
	r, err := Start(&chunked{b: []byte(body), rnd: rand.New(rand.NewPCG(9, 10)), max: 32 << 10}, -1)
	if err != nil {
		t.Fatal(err)
	}
	rd := r.Body(backendModel)
	r.Release()
	var out bytes.Buffer
	buf := make([]byte, 16<<10)
	held := 0
	for {
		n, err := rd.Read(buf)
		out.Write(buf[:n])
		r.mu.Lock()
		held = max(held, len(r.buf))
		r.mu.Unlock()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if exp := want(t, body); !bytes.Equal(out.Bytes(), exp) {
		t.Fatalf("the body changed on its way (%d bytes, want %d)", out.Len(), len(exp))
	}
	// One message (1 MB) is read before it is handed out; never both.
	if held > 1<<20+(256<<10) {
		t.Fatalf("held up to %d bytes of a %d-byte body after Release", held, len(body))
	}
	if _, err := r.Body("other").Read(buf); err == nil {
		t.Fatal("an attempt started after Release")
	}
}
