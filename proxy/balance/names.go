package balance

import "strconv"

// uniqueNames makes each backend's name its own: two backends whose
// api_base differ only where the default name does not look (the
// credentials, the scheme, the path) would share one, and so the series
// of /metrics (which then fails) and a line of /backends. The second is
// name#2, the third name#3, in file order.
func uniqueNames(backends []*Backend) {
	taken := map[string]bool{}
	for _, b := range backends {
		taken[b.Name] = true
	}
	seen := map[string]bool{}
	for _, b := range backends {
		if !seen[b.Name] {
			seen[b.Name] = true
			continue
		}
		for n := 2; ; n++ {
			if name := b.Name + "#" + strconv.Itoa(n); !taken[name] {
				b.Name = name
				break
			}
		}
		taken[b.Name], seen[b.Name] = true, true
	}
}
