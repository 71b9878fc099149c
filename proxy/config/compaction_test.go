package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestCompactionKey(t *testing.T) {
	head := "model_list:\n  - model_name: a\n    proxy_params: {model: vendorb/m, api_base: 'http://h/v1', api_key: k}\ngeneral_settings:\n"
	vars := env(map[string]string{"CK": "a-secret-from-the-environment", "CK_OLD": "the-older-secret-still-open"})
	for _, c := range []struct {
		yaml string
		want []string
	}{
		{"  compaction_key: a-literal-secret-0123\n", []string{"a-literal-secret-0123"}},
		{"  compaction_key: os.environ/CK\n", []string{"a-secret-from-the-environment"}},
		{"  compaction_key:\n    - os.environ/CK\n    - os.environ/CK_OLD\n", []string{"a-secret-from-the-environment", "the-older-secret-still-open"}},
	} {
		cfg, err := Parse("c.yaml", []byte(head+c.yaml), vars)
		if err != nil {
			t.Fatalf("%s: %v", c.yaml, err)
		}
		if !reflect.DeepEqual(cfg.CompactionKeys, c.want) {
			t.Errorf("%s: %q", c.yaml, cfg.CompactionKeys)
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{"  compaction_key: short\n", "at least 16 characters"},
		{"  compaction_key: []\n", "empty list"},
		{"  compaction_key: os.environ/NOT_SET\n", "NOT_SET"},
		{"  compaction_key:\n    - a-literal-secret-0123\n    - tiny\n", "c.yaml:7:"},
	} {
		_, err := Parse("c.yaml", []byte(head+c.yaml), vars)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "compaction_key") {
			t.Errorf("%s: %v", c.yaml, err)
		}
	}
}
