package stub

import (
	"strconv"
	"strings"
)

// summaryMark starts the summary the stub writes when it is asked for one
// (a compaction: the proxy's remote compaction, or a client's own), so
// that it knows the summary when a later request carries it.
const summaryMark = "stub-summary:"

// asksForSummary reports whether the last user text asks for a checkpoint
// summary of the conversation, as a compaction prompt does.
func asksForSummary(last string) bool {
	l := strings.ToLower(last)
	return strings.Contains(l, "checkpoint") && (strings.Contains(l, "summary") || strings.Contains(l, "compaction"))
}

// summaryOf is the stub's summary of a conversation: how many messages it
// had, and how many of them were tool results.
func summaryOf(req *chatRequest) string {
	tools := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			tools++
		}
	}
	return summaryMark + " the conversation had " + strconv.Itoa(len(req.Messages)) + " messages, " + strconv.Itoa(tools) + " of them tool results; the work asked for is done."
}

// hasSummary reports whether the conversation carries a summary the stub
// wrote: its work (a stub:shell call) was done before the compaction.
func hasSummary(last string) bool { return strings.Contains(last, summaryMark) }
