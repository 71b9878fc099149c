package install

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Unregister removes from settings, the content of a client settings file,
// every hook that runs command, under any event: an entry that runs only
// command goes whole, from an entry that also runs other hooks only the
// command's hook goes, and an event, or "hooks", left empty goes too. Every
// other byte of settings stays as it is, whatever the user changed since
// install. removed counts the hooks removed; empty says nothing is left but
// an empty object.
func Unregister(settings []byte, command string) (out []byte, removed int, empty bool, err error) {
	return unregisterMatching(settings, func(c string) bool { return c == command })
}

// unregisterMatching is Unregister for every command hook whose command
// match accepts.
func unregisterMatching(settings []byte, match func(string) bool) (out []byte, removed int, empty bool, err error) {
	lead := len(settings) - len(bytes.TrimLeft(settings, " \t\r\n"))
	tail := len(bytes.TrimRight(settings, " \t\r\n"))
	if lead >= tail || string(settings[lead:tail]) == "null" {
		return settings, 0, true, nil
	}
	if _, err := parseObject(settings); err != nil {
		return nil, 0, false, fmt.Errorf("not a JSON object: %w", err)
	}
	top := settings[lead:tail]
	top, removed, err = withoutCommandIn(top, match, []string{"hooks"}, 0)
	if err != nil {
		return nil, 0, false, err
	}
	members, err := spans(top)
	if err != nil {
		return nil, 0, false, fmt.Errorf("not a JSON object: %w", err)
	}
	out = append(append(append([]byte(nil), settings[:lead]...), top...), settings[tail:]...)
	return out, removed, len(members) == 0, nil
}

// withoutCommandIn walks raw down path (object keys, then at depth 2 every
// event of "hooks") and removes command's hooks there, dropping members
// that are left empty on the way back up.
func withoutCommandIn(raw []byte, command func(string) bool, path []string, depth int) ([]byte, int, error) {
	if depth == 2 { // raw is the list of matcher entries of one event
		return withoutCommandEntries(raw, command)
	}
	if raw[0] != '{' {
		return raw, 0, nil // not the shape install writes; nothing of ours is in there
	}
	total := 0
	for {
		members, err := spans(raw)
		if err != nil {
			return nil, 0, err
		}
		changed := false
		for i := len(members) - 1; i >= 0; i-- {
			m := members[i]
			if depth < len(path) && m.key != path[depth] {
				continue
			}
			value, n, err := withoutCommandIn(raw[m.valueStart:m.end], command, path, depth+1)
			if err != nil {
				return nil, 0, err
			}
			if n == 0 {
				continue
			}
			total += n
			if inner, _ := spans(value); len(inner) == 0 {
				raw = without(raw, members, i)
			} else {
				raw = replaced(raw, m, value)
			}
			changed = true
			break // the spans moved; list them again
		}
		if !changed {
			return raw, total, nil
		}
	}
}

// withoutCommandEntries removes command from a list of matcher entries.
func withoutCommandEntries(raw []byte, command func(string) bool) ([]byte, int, error) {
	if raw[0] != '[' {
		return raw, 0, nil
	}
	total := 0
	for {
		entries, err := spans(raw)
		if err != nil {
			return nil, 0, err
		}
		changed := false
		for i := len(entries) - 1; i >= 0; i-- {
			entry := raw[entries[i].valueStart:entries[i].end]
			ours, others := countHooks(entry, command)
			switch {
			case ours == 0:
				continue
			case others == 0:
				raw = without(raw, entries, i)
			default:
				kept, err := withoutCommandHooks(entry, command)
				if err != nil {
					return nil, 0, err
				}
				raw = replaced(raw, entries[i], kept)
			}
			total += ours
			changed = true
			break
		}
		if !changed {
			return raw, total, nil
		}
	}
}

// countHooks counts the hooks of one matcher entry that run command and
// the others.
func countHooks(entry []byte, command func(string) bool) (ours, others int) {
	var e struct {
		Hooks []json.RawMessage `json:"hooks"`
	}
	if json.Unmarshal(entry, &e) != nil {
		return 0, 0
	}
	for _, raw := range e.Hooks {
		if runs(raw, command) {
			ours++
		} else {
			others++
		}
	}
	return ours, others
}

func runs(rawHook []byte, command func(string) bool) bool {
	var h hookEntry
	return json.Unmarshal(rawHook, &h) == nil && h.Type == "command" && command(h.Command)
}

// withoutCommandHooks is one matcher entry without the hooks that run command.
func withoutCommandHooks(entry []byte, command func(string) bool) ([]byte, error) {
	members, err := spans(entry)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if m.key != "hooks" {
			continue
		}
		list := entry[m.valueStart:m.end]
		for {
			hooks, err := spans(list)
			if err != nil {
				return nil, err
			}
			i := len(hooks) - 1
			for ; i >= 0 && !runs(list[hooks[i].valueStart:hooks[i].end], command); i-- {
			}
			if i < 0 {
				break
			}
			list = without(list, hooks, i)
		}
		return replaced(entry, m, list), nil
	}
	return entry, nil
}
