package dialect

// namedChoice rewrites a named tool_choice the way llama.cpp honours it:
// it ignores the object form ("Wrong type supplied for parameter
// 'tool_choice'") but forces a call on "required" (Chat) or {"type":"any"}
// (Messages), so that choice is sent with the tools narrowed to the named
// one. It returns nil when the choice names no tool, or none of the tools.
func namedChoice(f Format, choiceRaw, toolsRaw []byte) (choice, tools []byte, note string) {
	c, err := parse(choiceRaw)
	if err != nil || c.kind != '{' {
		return nil, nil, ""
	}
	typ, _ := c.get("type").str()
	var name string
	switch {
	case f == Chat && typ == "function":
		name, _ = c.get("function").get("name").str()
	case f == Messages && typ == "tool":
		name, _ = c.get("name").str()
	default:
		return nil, nil, ""
	}
	list, err := parse(toolsRaw)
	if err != nil || list.kind != '[' || name == "" {
		return nil, nil, ""
	}
	var kept []*node
	for _, t := range list.vals {
		holder := t
		if f == Chat {
			holder = t.get("function")
		}
		if n, _ := holder.get("name").str(); n == name {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		return nil, nil, ""
	}
	list.vals = kept
	if f == Chat {
		choice = []byte(`"required"`)
	} else {
		any := &node{kind: '{', keys: []string{"type"}, vals: []*node{{kind: '"', raw: []byte(`"any"`)}}}
		if p := c.get("disable_parallel_tool_use"); p != nil {
			any.keys, any.vals = append(any.keys, "disable_parallel_tool_use"), append(any.vals, p)
		}
		choice = any.append(nil)
	}
	return choice, list.append(make([]byte, 0, len(toolsRaw))),
		"tool_choice " + string(choiceRaw) + " sent as " + string(choice) + " with the tools narrowed to " + name + " (llama.cpp ignores a named tool_choice)"
}
