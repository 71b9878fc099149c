package doctor

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/dialect"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/overflow"
)

// clientTool is one of the coding client's tools as a Chat tool.
type clientTool struct {
	name string
	tool jsontext.Value // {"type":"function","function":{…}}
}

// clientTools are the tools of the coding client's recorded request
// (fixtures.ClaudeCodeRequest), as Chat tools.
func clientTools() ([]clientTool, error) {
	raw, err := fixtures.ClaudeCodeRequest()
	if err != nil {
		return nil, err
	}
	var req struct {
		Body struct {
			Tools []struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				InputSchema jsontext.Value `json:"input_schema"`
			} `json:"tools"`
		} `json:"body"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, err
	}
	out := make([]clientTool, 0, len(req.Body.Tools))
	for _, t := range req.Body.Tools {
		fn := map[string]any{"name": t.Name, "description": t.Description, "parameters": t.InputSchema}
		b, err := json.Marshal(map[string]any{"type": "function", "function": fn}, json.Deterministic(true))
		if err != nil {
			return nil, err
		}
		out = append(out, clientTool{t.Name, b})
	}
	return out, nil
}

// toolsRequest is a one-token completion that offers tools.
func (c *checker) toolsRequest(tools []clientTool) []byte {
	b := []byte(`{"model":` + quote(c.route.BackendModel) + `,"max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[`)
	for i, t := range tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, t.tool...)
	}
	return append(b, "]}"...)
}

// toolSchemas offers the backend the coding client's tools as the proxy
// sends them (rewritten for its server where package dialect does): all
// at once, and when that is refused, one by one to name the ones it
// cannot take.
func (c *checker) toolSchemas() {
	tools, err := clientTools()
	if err != nil {
		c.add(CheckSchemas, Skip, "the coding client's recorded tools cannot be read: "+err.Error(), "")
		return
	}
	rewritten := ""
	if _, notes := dialect.Fit(nil, c.info.Server, dialect.Chat, c.toolsRequest(tools)); len(notes) > 0 {
		rewritten = fmt.Sprintf(", %d keyword(s) rewritten for %s first", len(notes), c.info.Server)
	}
	body, status, err := c.post("/chat/completions", c.asSent(c.toolsRequest(tools)))
	if err == nil && status/100 == 2 {
		c.add(CheckSchemas, OK, fmt.Sprintf("the coding client's %d tools compile (as the proxy sends them%s)", len(tools), rewritten), "")
		return
	}
	if err != nil || (status != http.StatusBadRequest && overflow.Wording(status, body) == "") {
		// Not the schemas: the model, the key or the server itself.
		c.add(CheckSchemas, Skip, "the probe failed: "+c.redact(failure(status, body, err)), "")
		return
	}
	var refused []string
	overflowed := 0
	for _, t := range tools {
		body, status, err := c.post("/chat/completions", c.asSent(c.toolsRequest([]clientTool{t})))
		switch {
		case err != nil:
			c.add(CheckSchemas, Skip, "the probe failed: "+c.redact(failure(status, body, err)), "")
			return
		case status/100 == 2:
		case overflow.Wording(status, body) != "":
			overflowed++
		default:
			refused = append(refused, t.name+" ("+c.redact(failure(status, body, nil))+")")
		}
	}
	switch {
	case len(refused) > 0:
		c.add(CheckSchemas, Fail, fmt.Sprintf("%d of the coding client's %d tools refused%s: %s", len(refused), len(tools), rewritten, strings.Join(refused, "; ")),
			"the server cannot compile these tool schemas: check its log, or report the keyword it refuses (proxy/dialect rewrites what each server is known to refuse)")
	case overflowed > 0:
		c.add(CheckSchemas, Warn, fmt.Sprintf("the tools together overflow the window; %d of %d alone too; each of the others compiles%s", overflowed, len(tools), rewritten),
			"serve the model with a larger context")
	default:
		c.add(CheckSchemas, Warn, fmt.Sprintf("each of the coding client's %d tools compiles alone, all together are refused: %s", len(tools), c.redact(failure(status, body, nil))),
			"check the backend's log")
	}
}

// overflow provokes a context overflow with a prompt just over the
// discovered window (--probe-overflow) and says how the backend words it.
func (c *checker) overflow() {
	window := c.route.ContextWindow
	if window == 0 {
		window = c.info.ContextWindow
	}
	switch {
	case !c.probeOverflow:
		c.add(CheckOverflow, Skip, "not probed (--probe-overflow sends a prompt just over the window)", "")
		return
	case window == 0:
		c.add(CheckOverflow, Skip, "the window is unknown: nothing to exceed", "")
		return
	}
	words := window + window/4 + 64 // "hi " is one token or more in every tokenizer
	prompt := strings.Repeat("hi ", words)
	payload := []byte(`{"model":` + quote(c.route.BackendModel) + `,"max_tokens":1,"messages":[{"role":"user","content":"` + prompt + `"}]}`)
	body, status, err := c.post("/chat/completions", payload)
	switch class := overflow.Wording(status, body); {
	case err != nil:
		c.add(CheckOverflow, Fail, "the probe failed: "+c.redact(failure(status, body, err)), "check the backend's log")
	case status/100 == 2:
		c.add(CheckOverflow, Warn, fmt.Sprintf("a prompt of about %d tokens, over the %d-token window, was answered %d: the server cuts the prompt instead of refusing it (Ollama does)", words, window, status),
			"the proxy refuses a prompt over the window before it reaches such a server; keep context_window right (proxy_params.context_window, or the server's loaded context)")
	case class != "":
		c.add(CheckOverflow, OK, fmt.Sprintf("recognized (%s wording): %d %s", class, status, c.redact(clipString(chat.ParseError(body), 160))), "")
	default:
		c.add(CheckOverflow, Fail, fmt.Sprintf("a prompt over the window got %s, not recognized as an overflow: the client would not compact", c.redact(failure(status, body, nil))),
			"report this wording (proxy/overflow recognizes an overflow by its meaning)")
	}
}
