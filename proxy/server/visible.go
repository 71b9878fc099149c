package server

import (
	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

// visibleBackends is what GET /backends shows the key k: every backend
// to the master key (k nil); to a per-user key the backends of the model
// names it may use, each with those of its aliases only.
func visibleBackends(all []balance.Status, k *keys.Key) []balance.Status {
	if k == nil || len(k.Models) == 0 {
		return all
	}
	out := make([]balance.Status, 0, len(all))
	for _, b := range all {
		var aliases []string
		for _, a := range b.Aliases {
			if k.Allows(a) {
				aliases = append(aliases, a)
			}
		}
		if len(aliases) > 0 {
			b.Aliases = aliases
			out = append(out, b)
		}
	}
	return out
}
