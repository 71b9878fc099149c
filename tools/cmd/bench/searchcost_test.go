package main

import (
	"bytes"
	"testing"
)

// TestSearchScanMeasuresARequestWithoutTheTool: the scan is measured on
// the 54 KB Messages case, which carries no web search tool, and a body
// that does carry one is refused (it would measure the loop's way in).
func TestSearchScanMeasuresARequestWithoutTheTool(t *testing.T) {
	cases, err := buildCases()
	if err != nil {
		t.Fatal(err)
	}
	var large *kase
	for _, k := range cases {
		if k.api == "messages" && k.large {
			large = k
		}
	}
	if large == nil {
		t.Fatal("no 54 KB Messages case")
	}
	withTool := *large
	withTool.body = bytes.Replace(large.body, []byte(`"tools": [`), []byte(`"tools": [{"type":"web_search_20250305","name":"web_search"},`), 1)
	if bytes.Equal(withTool.body, large.body) {
		t.Fatal("the fixture has no tools member to add the tool to")
	}
	if _, err := measureSearchScan([]*kase{&withTool}); err == nil {
		t.Error("a case with a web search tool was measured as one without")
	}
}
