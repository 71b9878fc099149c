package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// row of the main table.
type row []string

func table(head row, rows []row) string {
	w := make([]int, len(head))
	for _, r := range append([]row{head}, rows...) {
		for i, c := range r {
			w[i] = max(w[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	line := func(r row) {
		b.WriteString("|")
		for i, c := range r {
			b.WriteString(" " + pad(c, w[i]) + " |")
		}
		b.WriteString("\n")
	}
	line(head)
	sep := make(row, len(head))
	for i := range sep {
		sep[i] = strings.Repeat("-", w[i])
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
	return b.String()
}

const dash = "—"

// perEvent is what the target adds to the body of a stream (first byte to
// last), per backend event.
func perEvent(direct, via latency) time.Duration {
	if direct.events <= 0 {
		return 0
	}
	return (via.body50 - direct.body50) / time.Duration(direct.events)
}

func (res *results) mainTable() string {
	head := row{"case", "via", "p50", "p99", "added p50", "×floor", "added p99", "×floor", "added TTFB p50", "×floor", "added/event", "CPU/req", "CPU/req c=32", "rps c=32", "rps c=256"}
	var rows []row
	for _, cr := range res.cases {
		d, f := cr.via[0], cr.via[1]
		for i, name := range []string{"direct", "floor", "dragoman"} {
			l := cr.via[i]
			r := row{cr.k.name + " (" + kb(cr.k.size) + ")", name, us(l.p50), us(l.p99)}
			if i == 0 {
				r[0] = cr.k.name + " (" + kb(cr.k.size) + ")"
				r = append(r, dash, dash, dash, dash, dash, dash, dash, dash, dash)
			} else {
				r[0] = ""
				ap50, ap99 := l.p50-d.p50, l.p99-d.p99
				x50, x99 := dash, dash
				if i == 2 {
					x50, x99 = ratio(ap50, f.p50-d.p50), ratio(ap99, f.p99-d.p99)
				}
				r = append(r, us(ap50), x50, us(ap99), x99)
				if cr.k.stream {
					at := l.ttfb50 - d.ttfb50
					xt := dash
					if i == 2 {
						xt = ratio(at, f.ttfb50-d.ttfb50)
					}
					r = append(r, us(at), xt, us(perEvent(d, l)))
				} else {
					r = append(r, dash, dash, dash)
				}
				r = append(r, us(l.cpu), us(l.cpuLoaded))
			}
			r = append(r, strconv.FormatFloat(l.rps[0], 'f', 0, 64), strconv.FormatFloat(l.rps[1], 'f', 0, 64))
			rows = append(rows, r)
		}
		for _, t := range []struct {
			via string
			l   *latency
		}{{"dragoman, tool_calls_in_text auto", cr.textAuto}, {"dragoman, tool_calls_in_text off", cr.textOff}} {
			if via, t := t.via, t.l; t != nil {
				rows = append(rows, row{"", via, us(t.p50), us(t.p99),
					us(t.p50 - d.p50), ratio(t.p50-d.p50, f.p50-d.p50), us(t.p99 - d.p99), ratio(t.p99-d.p99, f.p99-d.p99),
					us(t.ttfb50 - d.ttfb50), ratio(t.ttfb50-d.ttfb50, f.ttfb50-d.ttfb50), us(perEvent(d, *t)), us(t.cpu), dash, dash, dash})
			}
		}
		if b := cr.bufFloor; b != nil {
			rows = append(rows, row{"", "floor, body read first", us(b.p50), us(b.p99),
				us(b.p50 - d.p50), ratio(b.p50-d.p50, f.p50-d.p50), us(b.p99 - d.p99), ratio(b.p99-d.p99, f.p99-d.p99),
				dash, dash, dash, us(b.cpu), dash, dash, dash})
		}
	}
	return table(head, rows)
}

func kb(n int) string {
	if n >= 10000 {
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + " kB"
	}
	return strconv.Itoa(n) + " B"
}

func (res *results) memTable() string {
	head := row{"process", "idle (after start + 1 request)", "peak, whole run (1–256 connections)", "peak, 256 concurrent 54 KB streams"}
	var rows []row
	for i, name := range []string{"floor", "dragoman"} {
		m := res.mem[i]
		run := "—" // not measured (--mem-only)
		if m.peakRun > 0 {
			run = mib(m.peakRun)
		}
		rows = append(rows, row{name, mib(m.idle), run, mib(m.peakStreams) + " (" + strconv.Itoa(m.streams) + " streams)"})
	}
	return table(head, rows)
}

func (res *results) logTable() string {
	head := row{"case (1 connection)", "p50 --log-level warn", "p50 --log-level info", "Δ p50", "CPU/req warn", "CPU/req info", "Δ CPU/req"}
	var rows []row
	for _, l := range res.logging {
		rows = append(rows, row{l.name, us(l.p50[0]), us(l.p50[1]), us(l.p50[1] - l.p50[0]), us(l.cpu[0]), us(l.cpu[1]), us(l.cpu[1] - l.cpu[0])})
	}
	return table(head, rows)
}

// check is one target of issue 7.
type goal struct {
	what, limit, got string
	met              bool
}

func (res *results) goals() []goal {
	find := func(api string, large, stream bool) *caseResult {
		for i := range res.cases {
			k := res.cases[i].k
			if k.api == api && k.large == large && k.stream == stream {
				return &res.cases[i]
			}
		}
		return nil
	}
	added := func(cr *caseResult, i int, f func(latency) time.Duration) time.Duration {
		return f(cr.via[i]) - f(cr.via[0])
	}
	p50 := func(l latency) time.Duration { return l.p50 }
	p99 := func(l latency) time.Duration { return l.p99 }
	ttfb := func(l latency) time.Duration { return l.ttfb50 }
	var g []goal
	multiple := func(what string, cr *caseResult, f func(latency) time.Duration, limit float64) {
		if cr == nil {
			return
		}
		dm, fl := added(cr, 2, f), added(cr, 1, f)
		x := float64(dm) / float64(fl)
		got := fmt.Sprintf("%.2f × (%s vs %s)", x, us(dm), us(fl))
		if b := cr.bufFloor; b != nil {
			got += fmt.Sprintf("; %.2f × a floor that reads the body first", float64(dm)/float64(f(*b)-f(cr.via[0])))
		}
		g = append(g, goal{what + " (" + cr.k.name + ")", "≤ " + strconv.FormatFloat(limit, 'f', -1, 64) + " × floor",
			got, fl > 0 && x <= limit})
	}
	ml := find("messages", true, false)
	multiple("Messages translation, added p50", ml, p50, 1.5)
	multiple("Messages translation, added p99", ml, p99, 2)
	multiple("Responses translation, added p50", find("responses", true, false), p50, 1.5)
	multiple("Messages pass-through to a native backend, added p50 (issue 12)", find("native", true, false), p50, 1.1)
	for _, large := range []bool{true, false} {
		multiple("Chat pass-through, added p50", find("chat", large, false), p50, 1.15)
	}
	for _, api := range []string{"messages", "chat"} {
		multiple("stream, added TTFB p50", find(api, true, true), ttfb, 1.5)
	}
	for i := range res.cases {
		if cr := &res.cases[i]; cr.textOff != nil && cr.textAuto != nil {
			auto, off := cr.textAuto.p50-cr.via[0].p50, cr.textOff.p50-cr.via[0].p50
			x := float64(auto) / float64(off)
			g = append(g, goal{"tool_calls_in_text auto vs off, added p50 (issue 38, " + cr.k.name + ")", "≤ 1.1 × off",
				fmt.Sprintf("%.2f × (%s vs %s)", x, us(auto), us(off)), off > 0 && x <= 1.1})
		}
	}
	worst := time.Duration(0)
	var worstName string
	for _, cr := range res.cases {
		if cr.k.stream {
			if e := perEvent(cr.via[0], cr.via[2]); e > worst || worstName == "" {
				worst, worstName = e, cr.k.name
			}
		}
	}
	g = append(g, goal{"stream, added per event (worst case: " + worstName + ")", "≤ 10 µs", us(worst), worst <= 10*time.Microsecond})
	if ml != nil {
		cpu := ml.via[2].cpu
		g = append(g, goal{"proxy CPU per translated 54 KB request (1 connection)", "≤ 100 µs", us(cpu), cpu <= 100*time.Microsecond})
	}
	m := res.mem[1]
	g = append(g, goal{"peak RSS with 256 concurrent streams", "≤ 64 MB", mib(m.peakStreams), m.peakStreams <= 64<<20})
	g = append(g, goal{"peak RSS idle", "≤ 20 MB", mib(m.idle), m.idle <= 20<<20})
	g = append(g, res.metricsGoals()...)
	g = append(g, res.searchGoal(ml))
	if res.pool != nil {
		g = append(g, res.pool.goal())
	}
	return g
}

func (res *results) goalTable() string {
	return goalTable("target (issue 7)", res.goals())
}

// goalTable renders goals as a table of target, limit, this run's number
// and whether it was met; "" without goals.
func goalTable(title string, goals []goal) string {
	if len(goals) == 0 {
		return ""
	}
	var rows []row
	for _, g := range goals {
		met := "met"
		if !g.met {
			met = "NOT met"
		}
		rows = append(rows, row{g.what, g.limit, g.got, met})
	}
	return table(row{title, "limit", "this run", ""}, rows)
}

func (res *results) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Dragoman bench, %s — %s, %d cores, %s", res.date.Format("2006-01-02 15:04 MST"), res.cpu, res.cores, res.goVersion)
	if res.quick {
		b.WriteString(" — QUICK RUN (--quick): too few requests for stable numbers")
	}
	b.WriteString("\n\n")
	b.WriteString(res.mainTable())
	b.WriteString("\n")
	b.WriteString(res.memTable())
	b.WriteString("\n")
	b.WriteString(res.logTable())
	b.WriteString("\n")
	b.WriteString(res.metricsTable())
	b.WriteString("\n")
	if res.pool != nil {
		b.WriteString(res.pool.text())
		b.WriteString("\n")
	}
	b.WriteString(res.goalTable())
	return b.String()
}

const (
	beginMark = "<!-- bench:begin (written by make bench; edit outside the markers) -->"
	endMark   = "<!-- bench:end -->"
)

// writeDoc puts the run between the bench markers of path, keeping what
// is written around them; a file without markers gets them appended.
func writeDoc(path string, res *results, text string) error {
	return writeBlock(path, beginMark, endMark, "Run of "+res.date.Format("2006-01-02")+" on "+res.cpu+", "+strconv.Itoa(res.cores)+" cores, "+res.goVersion+":\n\n```\n"+text+"```\n")
}
