package vision

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const png = "iVBORw0KGgo="

func TestImagesAndReplaceInEachFormat(t *testing.T) {
	cases := []struct {
		name, body, url, textType string
	}{
		{"messages base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}},{"type":"text","text":"what"}]}]}`, "data:image/png;base64," + png, "text"},
		{"messages url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.test/a.png"}}]}]}`, "https://example.test/a.png", "text"},
		{"messages tool result", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}]}]}]}`, "data:image/png;base64," + png, "text"},
		{"chat", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png + `"}}]}]}`, "data:image/png;base64," + png, "text"},
		{"responses", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,` + png + `"}]}]}`, "data:image/png;base64," + png, "input_text"},
	}
	for _, c := range cases {
		imgs := Images([]byte(c.body))
		if len(imgs) != 1 || imgs[0].URL != c.url {
			t.Errorf("%s: images %+v, want one of %s", c.name, imgs, c.url)
			continue
		}
		out, err := Replace([]byte(c.body), map[string]string{imgs[0].Hash: "a red \"square\""})
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatalf("%s: not JSON: %s", c.name, out)
		}
		want := fmt.Sprintf(`{"type":%q,"text":"[Image description, written by another model: a red \"square\"]"}`, c.textType)
		if !strings.Contains(string(out), want) || len(Images(out)) != 0 {
			t.Errorf("%s: %s, want the image replaced by %s", c.name, out, want)
		}
		if !strings.Contains(string(out), `"model":"m"`) {
			t.Errorf("%s: the rest changed: %s", c.name, out)
		}
	}
}

func TestReplaceKeepsUndescribedAndIdenticalBytes(t *testing.T) {
	body := `{"model":"m","max_tokens":123456789012345678,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}]}]}`
	out, err := Replace([]byte(body), map[string]string{})
	if err != nil || string(out) != body {
		t.Fatalf("nothing to replace: %s, %v", out, err)
	}
	two := `{"messages":[{"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}`
	if n := len(Images([]byte(two))); n != 1 {
		t.Errorf("the same image twice: %d images, want 1", n)
	}
	if Images([]byte(`{"model":`)) != nil {
		t.Error("images in a body that is not JSON")
	}
}

func TestCacheBoundAndPerClient(t *testing.T) {
	c := NewCache(2)
	c.Put("alice", "img1", "one")
	if _, ok := c.Get("bob", "img1"); ok {
		t.Error("bob sees alice's description")
	}
	c.Put("alice", "img2", "two")
	c.Get("alice", "img1") // img1 is the most recently used
	c.Put("alice", "img3", "three")
	if c.Len() != 2 {
		t.Errorf("%d entries, want 2", c.Len())
	}
	if _, ok := c.Get("alice", "img2"); ok {
		t.Error("the least recently used was kept")
	}
	if d, ok := c.Get("alice", "img1"); !ok || d != "one" {
		t.Errorf("img1: %q %v", d, ok)
	}
	c.Put("alice", "long", strings.Repeat("é", MaxDescription))
	if d, _ := c.Get("alice", "long"); len(d) > MaxDescription || !strings.HasPrefix(d, "é") || strings.ContainsRune(d, '\uFFFD') {
		t.Errorf("a long description kept %d bytes", len(d))
	}
}

func TestDescribeOnceForConcurrentRequests(t *testing.T) {
	c := NewCache(8)
	var calls atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, ok := c.Describe("alice", "img", func() (string, bool) {
				calls.Add(1)
				<-release
				return "a cat", true
			})
			if !ok || d != "a cat" {
				t.Errorf("got %q %v", d, ok)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("described %d times, want once", n)
	}
	if _, ok := c.Describe("bob", "img", func() (string, bool) { return "", false }); ok {
		t.Error("a failed description reads as one")
	}
	if _, ok := c.Get("bob", "img"); ok {
		t.Error("a failed description was kept")
	}
}
