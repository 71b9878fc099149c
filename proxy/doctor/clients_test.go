package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
)

// TestClientSettingsNameTheRealClientsVariables: the note of what to set
// names what Claude Code, a Chat client and Codex read, and none of the
// spec's words for them, which no client reads.
func TestClientSettingsNameTheRealClientsVariables(t *testing.T) {
	results := clientChecks(context.Background(), &config.Config{}, time.Second)
	var note *Result
	for i := range results {
		if results[i].Check == CheckClientSettings {
			note = &results[i]
		}
	}
	if note == nil || note.Status != Info {
		t.Fatalf("no %s note among %+v", CheckClientSettings, results)
	}
	for _, want := range []string{"ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "OPENAI_BASE_URL", "OPENAI_API_KEY", "openai_base_url", "CODEX_API_KEY", "model_providers"} {
		if !strings.Contains(note.Fix, want) {
			t.Errorf("the note lacks %s: %s", want, note.Fix)
		}
	}
	for _, not := range []string{"VENDORA_", "VENDORB_", "CODING_CLIENT_"} {
		if strings.Contains(note.Fix+note.Detail, not) {
			t.Errorf("the note names %s, which no client reads", not)
		}
	}
}
