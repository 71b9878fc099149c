package hook

import (
	"strings"
	"testing"
)

func TestParseReadsHookFields(t *testing.T) {
	in, err := Parse([]byte(`{"session_id":"s1","cwd":"/home/u/proj","hook_event_name":"Notification",
		"transcript_path":"/t.jsonl","last_assistant_message":"done","message":"needs you",
		"title":"Client","notification_type":"permission_prompt","extra":{"kept":"ignored"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Input{
		SessionID: "s1", Cwd: "/home/u/proj", HookEventName: "Notification",
		TranscriptPath: "/t.jsonl", LastAssistantMessage: "done", Message: "needs you",
		Title: "Client", NotificationType: "permission_prompt",
	}
	if in != want {
		t.Errorf("Parse = %+v, want %+v", in, want)
	}
}

func TestParseKeepsWellTypedFieldsBesideABadOne(t *testing.T) {
	in, err := Parse([]byte(`{"session_id":42,"cwd":"/w/proj"}`))
	if err == nil {
		t.Fatal("Parse accepted a numeric session_id")
	}
	if in.Project() != "proj" || in.Session() != Unknown {
		t.Errorf("project %q session %q, want proj and %q", in.Project(), in.Session(), Unknown)
	}
}

func TestParseRejectsNonJSON(t *testing.T) {
	in, err := Parse([]byte("not json"))
	if err == nil {
		t.Fatal("Parse accepted non-JSON")
	}
	if in != (Input{}) {
		t.Errorf("Parse returned %+v for non-JSON, want the zero Input", in)
	}
}

func TestMessage(t *testing.T) {
	tests := []struct {
		name    string
		event   string
		in      Input
		excerpt int
		want    string
	}{
		{"stop", Stop, Input{SessionID: "abc", Cwd: "/home/u/myproj"}, 0,
			"✅ Task complete in `myproj` (session `abc`)"},
		{"empty event is stop", "", Input{SessionID: "abc", Cwd: "/p"}, 0,
			"✅ Task complete in `p` (session `abc`)"},
		{"defaults", Stop, Input{}, 0,
			"✅ Task complete in `unknown` (session `unknown`)"},
		{"trailing slash in cwd", Stop, Input{SessionID: "s", Cwd: "/home/u/myproj/"}, 0,
			"✅ Task complete in `myproj` (session `s`)"},
		{"notification", Notification, Input{SessionID: "s", Cwd: "/w/app", Message: "Needs permission for <Bash> & more"}, 0,
			"🔔 Attention needed in `app` (session `s`): Needs permission for &lt;Bash&gt; &amp; more"},
		{"notification without message", Notification, Input{}, 0,
			"🔔 Attention needed in `unknown` (session `unknown`)"},
		{"other event", "SubagentStop", Input{SessionID: "s", Cwd: "/w/app"}, 0,
			"ℹ️ `SubagentStop` in `app` (session `s`)"},
		{"markup and backticks in names", Stop, Input{SessionID: "a`b", Cwd: "/w/<x>&y"}, 0,
			"✅ Task complete in `&lt;x&gt;&amp;y` (session `a'b`)"},
		{"excerpt escaped", Stop, Input{SessionID: "s", Cwd: "/w/app", LastAssistantMessage: "if a < b && c > d"}, 100,
			"✅ Task complete in `app` (session `s`)\n> if a &lt; b &amp;&amp; c &gt; d"},
		{"excerpt cut by runes, not bytes", Stop, Input{SessionID: "s", Cwd: "/w/app", LastAssistantMessage: "héllo wörld"}, 5,
			"✅ Task complete in `app` (session `s`)\n> héllo…"},
		{"excerpt cut before escaping", Stop, Input{SessionID: "s", Cwd: "/w/app", LastAssistantMessage: "<<<<"}, 2,
			"✅ Task complete in `app` (session `s`)\n> &lt;&lt;…"},
		{"excerpt quotes every line", Stop, Input{SessionID: "s", Cwd: "/w/app", LastAssistantMessage: "\n one\ntwo \n"}, 50,
			"✅ Task complete in `app` (session `s`)\n> one\n> two"},
		{"excerpt off", Stop, Input{SessionID: "s", Cwd: "/w/app", LastAssistantMessage: "text"}, 0,
			"✅ Task complete in `app` (session `s`)"},
		{"excerpt only on stop", Notification, Input{SessionID: "s", Cwd: "/w/app", LastAssistantMessage: "text"}, 10,
			"🔔 Attention needed in `app` (session `s`)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Message(tt.event, tt.in, tt.excerpt); got != tt.want {
				t.Errorf("Message() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestMessageExcerptOfHugeText(t *testing.T) {
	in := Input{LastAssistantMessage: strings.Repeat("x", 1<<20)}
	got := Message(Stop, in, 10)
	if !strings.HasSuffix(got, "\n> xxxxxxxxxx…") {
		t.Errorf("Message ends %q, want ten x and an ellipsis", got[len(got)-20:])
	}
}
