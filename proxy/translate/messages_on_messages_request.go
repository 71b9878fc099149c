package translate

import (
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonscan"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// MessagesOnMessagesRequest prepares a Messages request for a backend that serves
// the Messages format itself (a vendora/ route). Every byte of the body
// reaches the backend as the client sent it, except:
//   - model becomes Target.BackendModel;
//   - max_tokens is clamped to Target.MaxOutputTokens when that is set;
//   - the client's billing-header block at the head of the system prompt is
//     removed, by the rule of the translated path (isBillingBlock); a
//     system prompt that held nothing else goes whole;
//   - the top-level members named in Target.DropParams are removed.
//
// The body is validated as JSON; what the Messages format asks of it
// beyond model is the backend's to judge. BackendRequest.Stream is the
// request's stream flag.
func MessagesOnMessagesRequest(body []byte, resolve Resolver) (BackendRequest, error) {
	top, err := scanObject(body, false, nil)
	if err != nil {
		return BackendRequest{}, err
	}
	return passThrough(body, top, resolve)
}

// passThrough is MessagesOnMessagesRequest on a body whose members were read.
func passThrough(body []byte, top object, resolve Resolver) (BackendRequest, error) {
	target, stream, rename, err := passThroughTarget(top, resolve)
	if err != nil {
		return BackendRequest{}, err
	}
	var editBuf [8]edit // a request has a few edits: no allocation for them
	edits := append(editBuf[:0], rename)
	if v, ok := top.get("max_tokens"); ok && target.MaxOutputTokens > 0 && v.value.Kind() == '0' {
		if n, err := strconv.ParseFloat(string(v.value), 64); err == nil && n > float64(target.MaxOutputTokens) {
			edits = append(edits, edit{v.start, v.end, strconv.AppendInt(nil, int64(target.MaxOutputTokens), 10)})
		}
	}
	var dropBuf [16]bool
	drop := dropBuf[:0]
	for _, mem := range top.list {
		drop = append(drop, listed(target.DropParams, mem.name))
	}
	if sys, ok := top.get("system"); ok && sys.value.Kind() == '[' {
		i := slices.IndexFunc(top.list, func(mem member) bool { return mem.start == sys.start })
		if !drop[i] {
			start, end, only, found := billingElement(sys.value)
			switch {
			case found && only:
				drop[i] = true
			case found:
				edits = append(edits, edit{sys.start + start, sys.start + end, nil})
			}
		}
	}
	edits = memberDeletions(edits, top.list, drop)
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	return BackendRequest{Body: splice(body, edits), Target: target, Stream: stream, Tools: rawTools(target, &top, true)}, nil
}

// billingElement finds the billing-header block at the head of a system
// array (valid JSON): the bytes [start, end) to cut, its separator
// included, and whether it is the array's only element.
func billingElement(list []byte) (start, end int, only, found bool) {
	sc := jsonscan.New(list)
	only = true
	sc.Elements(func(i int) error {
		if i > 0 {
			sc.Peek()
			end, only = sc.Pos(), false // the separator goes with the block
			return errFound
		}
		sc.Peek()
		start = sc.Pos()
		raw, err := sc.Value()
		if err != nil || len(raw) == 0 || raw[0] != '{' || !billingObject(raw) {
			return errFound
		}
		end, found = sc.Pos(), true
		return nil
	})
	if !found {
		return 0, 0, false, false
	}
	return start, end, only, true
}

// listed reports whether name is one of the comma-separated names of
// list (Target.DropParams), without splitting it.
func listed(list, name string) bool {
	for list != "" {
		var first string
		first, list, _ = strings.Cut(list, ",")
		if first == name {
			return true
		}
	}
	return false
}

// billingObject reports whether raw, a JSON object (valid), decoded as a
// messages.Block is the billing block (isBillingBlock).
func billingObject(raw []byte) bool {
	var blk messages.Block
	return json.Unmarshal(raw, &blk, decodeOpts, aliasRaw) == nil && isBillingBlock(0, &blk)
}

// memberDeletions appends to edits the edits that remove the members of
// list marked in drop, with the commas between them, so the object stays
// valid JSON: a run of removed members goes up to the name of the member
// after it, or, at the end of the object, from the end of the member
// before it.
func memberDeletions(edits []edit, list []member, drop []bool) []edit {
	for i := 0; i < len(list); {
		if !drop[i] {
			i++
			continue
		}
		j := i
		for j+1 < len(list) && drop[j+1] {
			j++
		}
		switch {
		case j+1 < len(list):
			edits = append(edits, edit{list[i].keyStart, list[j+1].keyStart, nil})
		case i > 0:
			edits = append(edits, edit{list[i-1].end, list[j].end, nil})
		default:
			edits = append(edits, edit{list[i].keyStart, list[j].end, nil})
		}
		i = j + 1
	}
	return edits
}
