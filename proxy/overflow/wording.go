package overflow

import "github.com/dragoman-dev/dragoman/proxy/chat"

// Wording names the class of an overflow's wording, for `proxy check`:
// the server whose known wording it is (patterns), "by meaning" for a text
// that speaks of the context being exceeded in words none of them uses,
// "by its error code" for a code alone; "" when it is not an overflow
// (Detect's rules).
func Wording(status int, body []byte) string {
	if _, ok := Detect(status, body); !ok {
		return ""
	}
	text := chat.ParseError(body)
	if text == "" {
		text = string(body)
	}
	for _, p := range patterns {
		if p.re.MatchString(text) {
			return p.server
		}
	}
	if _, ok := byMeaning(text); ok {
		return "by meaning"
	}
	return "by its error code"
}
