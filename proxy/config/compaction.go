package config

import "go.yaml.in/yaml/v3"

// minCompactionKey is the shortest compaction_key accepted: a secret that
// seals what clients keep must not be guessable.
const minCompactionKey = 16

// compactionKeys reads general_settings.compaction_key: one secret (a
// literal or os.environ/NAME), or a list of them, the first the one that
// seals and the others the older ones that still open.
func (p *parser) compactionKeys(v *yaml.Node) ([]string, error) {
	const key = "general_settings.compaction_key"
	nodes := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		if len(v.Content) == 0 {
			return nil, p.errorf(v, "%s is an empty list: give one secret, or a list whose first entry seals (the others still open items sealed before a rotation)", key)
		}
		nodes = v.Content
	}
	var out []string
	for _, n := range nodes {
		s, err := p.secret(n, key)
		if err != nil {
			return nil, err
		}
		if len(s) < minCompactionKey {
			return nil, p.errorf(n, "%s must be at least %d characters (a random secret, e.g. from openssl rand -hex 32)", key, minCompactionKey)
		}
		out = append(out, s)
	}
	return out, nil
}
