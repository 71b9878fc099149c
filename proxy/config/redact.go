package config

import (
	"net/url"
	"strings"
)

// RedactedURL is a URL (an api_base) for showing: without the user and
// password it may hold (http://user:pass@host/v1 is http://host/v1). The
// requests still go to the URL as written.
func RedactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Not a URL: cut what a userinfo would be.
		scheme, rest, ok := strings.Cut(raw, "://")
		if at := strings.LastIndex(rest, "@"); ok && at >= 0 && !strings.Contains(rest[:at], "/") {
			return scheme + "://" + rest[at+1:]
		}
		return raw
	}
	if u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// ScrubCredentials takes out of text (an error, a log line) the user and
// password the URL raw holds, in the forms a URL and net/http's errors
// write them (user:pass@, user:***@, user@, the password alone).
func ScrubCredentials(text, raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return text
	}
	name := u.User.Username()
	forms := []string{u.User.String() + "@"}
	pass, hasPass := u.User.Password()
	if hasPass {
		forms = append(forms, name+":"+pass+"@", name+":***@", name+":xxxxx@")
	}
	if name != "" {
		forms = append(forms, url.User(name).String()+"@", name+"@")
	}
	for _, f := range forms {
		text = strings.ReplaceAll(text, f, "")
	}
	if hasPass && len(pass) >= 3 {
		text = strings.ReplaceAll(text, pass, "[redacted]")
		if esc := url.QueryEscape(pass); esc != pass {
			text = strings.ReplaceAll(text, esc, "[redacted]")
		}
	}
	return text
}
