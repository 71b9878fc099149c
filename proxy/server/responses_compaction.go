package server

// Remote compaction for the Responses endpoint (Codex's built-in provider):
//
//   - a request whose last input item is {"type":"compaction_trigger"}
//     ("remote compaction v2", codex-rs/core/src/compact_remote*.rs: the
//     client requires exactly one "compaction" output item back, whose
//     encrypted_content it keeps and replays) is answered with one
//     compaction item: the alias's backend model writes a summary of the
//     conversation before the trigger, and package compaction seals it;
//   - POST /v1/responses/compact (OpenAI's "Compact a response": model and
//     input in, a response.compaction object out, the user messages kept
//     and the rest replaced by one compaction item) does the same;
//   - a later request carrying the item reaches the backend with the
//     summary text in its place (opened here, before translation); an
//     item the proxy did not seal is a 400 that says so.
//
// The summary is asked of the backend through the same path as any
// Responses request (responsesBody: routing, limits, retries, metrics,
// the per-user key's usage), so its tokens count in the request's usage.

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/compaction"
	"github.com/dragoman-dev/dragoman/proxy/responses"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// compactPrompt is the instruction the summary is asked with, after the
// conversation (in the manner of Codex's own local compaction prompt,
// codex-rs/core/templates/compact/prompt.md).
const compactPrompt = "Stop here and write a checkpoint summary of this conversation, for another model that will take the task over with nothing else to go on but the user's messages. " +
	"Give: the user's goal; what has been done so far and the decisions taken; constraints and preferences that matter; the files, commands, names and data needed to continue; and the next steps. " +
	"Be brief and structured. Call no tool; answer with the summary alone."

// summaryLead introduces an opened summary where the compaction item was.
const summaryLead = "A summary of the conversation so far, written when its earlier part was compacted; continue from it:\n\n"

// newSealer is the compaction sealer of a configuration:
// general_settings.compaction_key when set; else a key derived from the
// first master key (PROXY_API_KEY or general_settings.master_key), which
// every replica of one deployment shares; else a key of this process
// alone (warned about: a restart, or another replica, cannot open what it
// sealed).
func newSealer(secrets []string, masterKeys [][]byte) (*compaction.Sealer, string) {
	if len(secrets) > 0 {
		s, err := compaction.New(secrets...)
		if err == nil {
			return s, "general_settings.compaction_key"
		}
	}
	if len(masterKeys) > 0 {
		if s, err := compaction.New("master key: " + string(masterKeys[0])); err == nil {
			return s, "master key"
		}
	}
	return compaction.Random(), ""
}

// responsesItems is a Responses request decoded down to its members and
// its input items, raw: what the compaction code reads and rewrites.
type responsesItems struct {
	members map[string]jsontext.Value
	input   []jsontext.Value
}

// itemHead is what an input item is read for here.
type itemHead struct {
	Type      string         `json:"type"`
	Role      string         `json:"role"`
	Encrypted jsontext.Value `json:"encrypted_content"`
}

// decodeItems reads body; ok is false when it is not an object whose input
// is an array (translation then says what is wrong).
func decodeItems(body []byte) (responsesItems, bool) {
	var ri responsesItems
	if json.Unmarshal(body, &ri.members) != nil {
		return ri, false
	}
	in := ri.members["input"]
	if in.Kind() != '[' || json.Unmarshal(in, &ri.input) != nil {
		return ri, false
	}
	return ri, true
}

func (ri *responsesItems) encode() []byte {
	in, _ := json.Marshal(ri.input)
	ri.members["input"] = in
	b, _ := json.Marshal(ri.members)
	return b
}

// compactionWord is in every body that holds a compaction or a
// compaction_trigger item. A request the proxy translates is not searched
// for it: the translation refuses such an item, and the server opens them
// then (responsesOpened); the paths that read a body before translating
// it (the compact endpoint, the web search loop) search it, and decode no
// body without it. It opens with no quote: bytes.Index finds a pattern's
// first byte with IndexByte, and falls back to comparing at every offset
// when that byte is as common as a quote is in JSON (`"compaction"` and
// `"compaction_trigger"` took 11 and 16 µs of Codex's 43 KB body, the
// bare word 7 µs for both).
var compactionWord = []byte(`compaction`)

// mentionsCompaction reports whether body may hold a compaction or a
// compaction_trigger item.
func mentionsCompaction(body []byte) bool { return bytes.Contains(body, compactionWord) }

// openCompactions returns body with each compaction item of its input
// replaced by a user message holding the summary it sealed; a compaction
// item the proxy did not seal is a 400 (ok false: answered).
func (s *Server) openCompactions(w http.ResponseWriter, f format, body []byte) ([]byte, bool) {
	ri, ok := decodeItems(body)
	if !ok {
		return body, true
	}
	changed := false
	for i, raw := range ri.input {
		var h itemHead
		if json.Unmarshal(raw, &h) != nil || h.Type != responses.ItemCompaction {
			continue
		}
		var sealed string
		if h.Encrypted.Kind() != '"' || json.Unmarshal(h.Encrypted, &sealed) != nil {
			f.write(w, problemf(invalidRequest, "input.%d: a compaction item needs encrypted_content, a string", i))
			return nil, false
		}
		summary, err := s.sealer.Open(sealed)
		if err != nil {
			f.write(w, problemf(invalidRequest, "input.%d: the encrypted_content of this compaction item is %s: the proxy opens only the compaction items it wrote (with general_settings.compaction_key, or a key derived from the master key); leave the item out, or start a new conversation", i, err.Error()))
			return nil, false
		}
		ri.input[i] = userMessage(summaryLead + summary)
		changed = true
	}
	if !changed {
		return body, true
	}
	return ri.encode(), true
}

// userMessage is a user message item holding text.
func userMessage(text string) jsontext.Value {
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	b, _ := json.Marshal(struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []part `json:"content"`
	}{"message", "user", []part{{"input_text", text}}})
	return b
}

// responsesOpened serves a Responses request that holds a compaction or
// a compaction_trigger item: its compaction items opened, a trigger last
// answered, the rest as any request (responsesBody, opened).
func (s *Server) responsesOpened(w http.ResponseWriter, r *http.Request, f format, body []byte) {
	body, ok := s.openCompactions(w, f, body)
	if !ok || s.compactOnTrigger(w, r, f, body) {
		return
	}
	s.responsesBody(w, r, f, body, true)
}

// readResponsesBody reads a Responses request's body with its compaction
// items opened (ok false: answered).
func (s *Server) readResponsesBody(w http.ResponseWriter, r *http.Request, f format) ([]byte, bool) {
	body, ok := s.readBody(w, r, f)
	if !ok || !mentionsCompaction(body) {
		return body, ok
	}
	return s.openCompactions(w, f, body)
}

// compactOnTrigger answers a request whose last input item is a
// compaction_trigger with one compaction item; false: not such a request.
func (s *Server) compactOnTrigger(w http.ResponseWriter, r *http.Request, f format, body []byte) bool {
	ri, ok := decodeItems(body)
	if !ok || len(ri.input) == 0 {
		return false
	}
	var last itemHead
	if json.Unmarshal(ri.input[len(ri.input)-1], &last) != nil || last.Type != responses.ItemCompactionTrigger {
		return false // a trigger elsewhere: translation refuses it
	}
	ri.input = ri.input[:len(ri.input)-1]
	var stream bool
	json.Unmarshal(ri.members["stream"], &stream)
	res, ok := s.summarize(w, r, f, ri)
	if !ok {
		return true
	}
	item := compactionItem(s.sealer.Seal(res.summary))
	resp := res.response(item)
	if !stream {
		writeJSON(w, resp)
		return true
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	ev := eventWriter{w: w}
	open := resp
	open.Status, open.Output, open.Usage = responses.StatusInProgress, []responses.OutputItem{}, nil
	ev.write(responses.EventCreated, "response", open)
	ev.write("response.in_progress", "response", open)
	ev.writeItem("response.output_item.added", item)
	ev.writeItem("response.output_item.done", item)
	ev.write("response.completed", "response", resp)
	return true
}

// compactEndpoint serves POST /v1/responses/compact: the conversation in
// input compacted into its user messages and one compaction item
// (OpenAI's API reference, "Compact a response": a response.compaction
// object with id, created_at, output and usage).
func (s *Server) compactEndpoint(w http.ResponseWriter, r *http.Request, f format) {
	body, ok := s.readResponsesBody(w, r, f)
	if !ok {
		return
	}
	ri, ok := decodeItems(body)
	if !ok {
		if _, _, err := translate.ResponsesOnChatRequest(body, func(string) (translate.Target, error) { return translate.Target{}, nil }); err != nil {
			f.write(w, requestProblem(err))
			return
		}
		f.write(w, problemf(invalidRequest, "input: must be an array of input items"))
		return
	}
	if p, ok := ri.members["previous_response_id"]; ok && p.Kind() == '"' && string(p) != `""` {
		f.write(w, problemf(invalidRequest, "previous_response_id: not supported: the proxy keeps no responses; send the conversation in input"))
		return
	}
	kept := make([]jsontext.Value, 0, len(ri.input)+1)
	for _, raw := range ri.input {
		var h itemHead
		if json.Unmarshal(raw, &h) == nil && (h.Type == "message" || h.Type == "") && h.Role == "user" {
			kept = append(kept, raw)
		}
	}
	res, ok := s.summarize(w, r, f, ri)
	if !ok {
		return
	}
	item := compactionItem(s.sealer.Seal(res.summary))
	itemJSON, _ := json.Marshal(item)
	writeJSON(w, struct {
		ID        string           `json:"id"`
		Object    string           `json:"object"`
		CreatedAt int64            `json:"created_at"`
		Output    []jsontext.Value `json:"output"`
		Usage     *responses.Usage `json:"usage"`
	}{res.id, "response.compaction", res.created, append(kept, itemJSON), res.usage})
}

// summary is what the backend answered a summary request with.
type summary struct {
	id      string
	created int64
	model   string
	summary string
	usage   *responses.Usage
}

// response is the response object that carries item as its one output.
func (m summary) response(item responses.OutputItem) responses.Response {
	return responses.Response{ID: m.id, Object: "response", CreatedAt: m.created, Status: responses.StatusCompleted,
		Model: m.model, Output: []responses.OutputItem{item}, Tools: []struct{}{}, ToolChoice: "auto",
		Truncation: "disabled", Usage: m.usage}
}

func compactionItem(sealed string) responses.OutputItem {
	return responses.OutputItem{Type: responses.ItemCompaction, ID: "cmp_" + strings.TrimPrefix(translate.NewResponseID(), "resp_"), Encrypted: &sealed}
}

// summarize asks the backend of the request's alias for a summary of the
// conversation in ri (its tools taken away, the summary prompt added), as
// a non-stream Responses request through responsesBody. ok is false when
// the answer was not one (w then holds the backend's error, as the
// client's request would have had it).
func (s *Server) summarize(w http.ResponseWriter, r *http.Request, f format, ri responsesItems) (summary, bool) {
	for _, m := range []string{"tools", "tool_choice", "parallel_tool_calls", "text", "include", "stream_options", "previous_response_id"} {
		delete(ri.members, m)
	}
	ri.members["stream"] = jsontext.Value("false")
	ri.input = append(ri.input, userMessage(compactPrompt))
	body := ri.encode()

	cw := &captureWriter{header: http.Header{}}
	inner := &recorder{ResponseWriter: cw}
	outer, _ := w.(*recorder)
	if outer != nil {
		inner.key, inner.obs = outer.key, outer.obs
	}
	s.responsesBody(inner, r, f, body, true)
	if outer != nil {
		outer.obs, outer.alias = inner.obs, inner.alias
		outer.obs.stream = false
	}
	if cw.status != http.StatusOK {
		for k, v := range cw.header {
			w.Header()[k] = v
		}
		w.WriteHeader(cw.status)
		w.Write(cw.body.Bytes())
		return summary{}, false
	}
	var resp struct {
		ID        string `json:"id"`
		CreatedAt int64  `json:"created_at"`
		Model     string `json:"model"`
		Output    []struct {
			Type    string `json:"type"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage *responses.Usage `json:"usage"`
	}
	if err := json.Unmarshal(cw.body.Bytes(), &resp); err != nil {
		f.write(w, problemf(badGateway, "the summary the backend wrote for the compaction could not be read: %v", err))
		return summary{}, false
	}
	var text strings.Builder
	for _, o := range resp.Output {
		if o.Type != "message" {
			continue
		}
		for _, c := range o.Content {
			if c.Type == "output_text" {
				text.WriteString(c.Text)
			}
		}
	}
	if strings.TrimSpace(text.String()) == "" {
		f.write(w, problemf(badGateway, "the backend answered the compaction's summary request with no text: nothing to compact into"))
		return summary{}, false
	}
	if resp.CreatedAt == 0 {
		resp.CreatedAt = time.Now().Unix()
	}
	return summary{id: resp.ID, created: resp.CreatedAt, model: resp.Model, summary: text.String(), usage: resp.Usage}, true
}

// captureWriter keeps a response in memory.
type captureWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *captureWriter) Header() http.Header { return c.header }
func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}
func (c *captureWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(p)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		responsesFormat.write(w, problemf(badGateway, "rendering the answer: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// eventWriter writes Responses stream events, numbered.
type eventWriter struct {
	w   http.ResponseWriter
	seq int
}

func (e *eventWriter) write(name, member string, v any) {
	b, _ := json.Marshal(v)
	e.emit(name, `,"`+member+`":`, b)
}

func (e *eventWriter) writeItem(name string, item responses.OutputItem) {
	b, _ := json.Marshal(item)
	e.emit(name, `,"output_index":0,"item":`, b)
}

func (e *eventWriter) emit(name, member string, b []byte) {
	out := make([]byte, 0, len(b)+len(name)*2+64)
	out = append(out, "event: "+name+"\ndata: {\"type\":\""+name+`","sequence_number":`...)
	out = strconv.AppendInt(out, int64(e.seq), 10)
	out = append(out, member...)
	out = append(out, b...)
	out = append(out, "}\n\n"...)
	e.seq++
	e.w.Write(out)
	if fl, ok := e.w.(http.Flusher); ok {
		fl.Flush()
	}
}
