package main

import (
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/doctor"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestCheckToolCallWrittenAsText: a model that answers the tool probe
// with its call written as text (Hermes, Qwen3-Coder XML) is named, with
// its family and that the proxy recovers it; with tool_calls_in_text off,
// it is a failure whose fix says to turn it on.
func TestCheckToolCallWrittenAsText(t *testing.T) {
	for _, c := range []struct {
		format, family, extra string
		status                doctor.Status
		detail, fix           string
	}{
		{stub.TextCallsHermes, "hermes", "", doctor.Warn, "the proxy recovers it", "works as is"},
		{stub.TextCallsQwen3Coder, "qwen3_coder", "", doctor.Warn, "the proxy recovers it", "works as is"},
		{stub.TextCallsHermes, "hermes", "      tool_calls_in_text: off\n", doctor.Fail, "leaves that family out", "tool_calls_in_text: auto"},
	} {
		t.Run(c.format+c.extra, func(t *testing.T) {
			url := serveBackend(t, stub.New(stub.Options{Model: "qwen3-coder", ContextWindow: 65536, TextCalls: c.format}))
			path := writeFile(t, "config.yaml", "model_list:\n  - model_name: claude-opus-5-5\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: "+url+"\n      api_key: k\n"+c.extra)
			_, text, rep := runCheck(t, "--config", path)
			r := result(rep, doctor.CheckToolCall)
			if r.Status != c.status || !strings.Contains(r.Detail, "get_weather(") || !strings.Contains(r.Detail, "in the "+c.family+" family") ||
				!strings.Contains(r.Detail, c.detail) || !strings.Contains(r.Fix, c.fix) {
				t.Errorf("%s: %+v\nwant %s naming get_weather, the %s family, %q; fix %q", doctor.CheckToolCall, r, c.status, c.family, c.detail, c.fix)
			}
			t.Logf("\n%s", text)
		})
	}
}
