package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The curves' tables, their plots (gonum.org/v1/plot, SVG, written next
// to the doc) and issue 18's targets.

const (
	curvesBegin = "<!-- bench-curves:begin (written by make bench; edit outside the markers) -->"
	curvesEnd   = "<!-- bench-curves:end -->"
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func (cr *curveResults) latencyTable(curves []curve, xname string) string {
	head := row{"case", xname, "bytes", "added p50 floor", "added p50 dragoman", "×floor", "added p99 floor", "added p99 dragoman", "CPU/req floor", "CPU/req dragoman", "×floor"}
	var rows []row
	for _, c := range curves {
		for _, p := range c.points {
			rows = append(rows, row{c.api, p.label, kb(p.size), us(p.added(1)), us(p.added(2)), ratio(p.added(2), p.added(1)),
				us(p.added99(1)), us(p.added99(2)), us(p.via[1].cpu), us(p.via[2].cpu), ratio(p.via[2].cpu, p.via[1].cpu)})
		}
	}
	return table(head, rows)
}

// perTool is the slope of the added p50 (and CPU) from the fewest to the
// most tools, for target i (1 floor, 2 Dragoman).
func perTool(c curve, i int) (lat, cpu time.Duration) {
	if len(c.points) < 2 {
		return 0, 0
	}
	a, b := c.points[0], c.points[len(c.points)-1]
	n := time.Duration(b.x - a.x)
	return (b.added(i) - a.added(i)) / n, (b.via[i].cpu - a.via[i].cpu) / n
}

func (cr *curveResults) streamTable() string {
	head := row{"streams", "floor peak RSS", "dragoman peak RSS", "dragoman per stream", "floor goroutines", "dragoman goroutines", "completed floor / dragoman"}
	var rows []row
	pts := cr.streams
	if cr.cold != nil {
		pts = append(append([]streamPoint{}, pts...), *cr.cold)
	}
	for i, p := range pts {
		name := itoa(p.n)
		if cr.cold != nil && i == len(pts)-1 {
			name += " waiting on a cold backend"
		}
		rows = append(rows, row{name, mib(p.peakRSS[0]), mib(p.peakRSS[1]), perStream(p, 1),
			itoa(p.goroutines[0]), itoa(p.goroutines[1]), itoa(p.done[0]) + " / " + itoa(p.done[1])})
	}
	return table(head, rows)
}

func perStream(p streamPoint, i int) string {
	if p.n == 0 {
		return dash
	}
	return strconv.FormatFloat(float64(p.peakRSS[i]-p.idle[i])/float64(p.n)/1000, 'f', 1, 64) + " kB"
}

func (cr *curveResults) connTable() string {
	head := row{"connections", "rps direct", "rps floor", "rps dragoman", "dragoman ÷ floor"}
	var rows []row
	for _, c := range cr.conns {
		rows = append(rows, row{itoa(c.c), f0(c.rps[0]), f0(c.rps[1]), f0(c.rps[2]), fratio(c.rps[2], c.rps[1])})
	}
	return table(head, rows)
}

func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

func fratio(a, b float64) string {
	if b <= 0 {
		return dash
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
}

func (cr *curveResults) goals() []goal {
	var g []goal
	at := func(cs []curve, api, label string) *curvePoint {
		for _, c := range cs {
			if c.api != api {
				continue
			}
			for i := range c.points {
				if c.points[i].label == label {
					return &c.points[i]
				}
			}
		}
		return nil
	}
	multiple := func(what string, p *curvePoint, limit float64) {
		if p == nil {
			return
		}
		x := float64(p.added(2)) / float64(p.added(1))
		g = append(g, goal{what, "≤ " + strconv.FormatFloat(limit, 'f', -1, 64) + "× floor",
			fmt.Sprintf("%.2f× (%s vs %s)", x, us(p.added(2)), us(p.added(1))), p.added(1) > 0 && x <= limit})
	}
	multiple("Chat pass-through added p50, 54 KB", at(cr.sizes, "chat", "54 KB"), 1.05)
	multiple("Chat pass-through added p50, 1 MB", at(cr.sizes, "chat", "1 MB"), 1.05)
	multiple("Messages translation added p50, 54 KB", at(cr.sizes, "messages", "54 KB"), 1.2)
	multiple("Messages translation added p50, 1 MB", at(cr.sizes, "messages", "1 MB"), 1.5)
	if p := at(cr.sizes, "messages", "54 KB"); p != nil {
		x := float64(p.via[2].cpu) / float64(p.via[1].cpu)
		g = append(g, goal{"proxy CPU per request, Messages 54 KB", "≤ 1.3× floor's",
			fmt.Sprintf("%.2f× (%s vs %s)", x, us(p.via[2].cpu), us(p.via[1].cpu)), p.via[1].cpu > 0 && x <= 1.3})
	}
	for _, c := range cr.tools {
		if c.api != "messages" {
			continue
		}
		dl, dc := perTool(c, 2)
		fl, _ := perTool(c, 1)
		g = append(g, goal{"added cost per extra tool (Messages, 12 → 150)", "≤ 2 µs",
			fmt.Sprintf("%s added p50 per tool (floor %s, so %s over the floor); CPU %s per tool", us(dl), us(fl), us(dl-fl), us(dc)), dl <= 2*time.Microsecond})
	}
	for _, p := range cr.streams {
		if p.n == 4000 {
			g = append(g, goal{"RSS at 4,000 concurrent slow streams", "≤ 400 MB (≤ 100 KB per stream)",
				mib(p.peakRSS[1]) + " (" + perStream(p, 1) + " per stream)", p.peakRSS[1] <= 400<<20})
		}
	}
	for _, c := range cr.conns {
		if c.c == 256 {
			x := c.rps[2] / c.rps[1]
			g = append(g, goal{"req/s at 256 connections, Chat 54 KB", "≥ 0.9× floor",
				fmt.Sprintf("%.2f× (%s vs %s)", x, f0(c.rps[2]), f0(c.rps[1])), x >= 0.9})
		}
	}
	return g
}

func (cr *curveResults) render(date time.Time, machine string, plots []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Curves run of %s — %s", date.Format("2006-01-02 15:04 MST"), machine)
	if cr.quick {
		b.WriteString(" — QUICK RUN (--quick): too few requests and streams for stable numbers")
	}
	b.WriteString(". Open-file limit: " + cr.nofile + ".\n\n")
	for _, pl := range plots {
		fmt.Fprintf(&b, "![%s](%s)\n", strings.TrimSuffix(strings.TrimPrefix(pl, "performance-"), ".svg"), pl)
	}
	if len(plots) > 0 {
		b.WriteString("\n")
	}
	code := func(title, t string) {
		b.WriteString("**" + title + "**\n\n```\n" + t + "```\n\n")
	}
	if len(cr.sizes) > 0 {
		code("Request size (non-stream, 1 connection, interleaved; added = minus the stub answered directly)", cr.latencyTable(cr.sizes, "size"))
	}
	if len(cr.tools) > 0 {
		var extra strings.Builder
		for _, c := range cr.tools {
			dl, dc := perTool(c, 2)
			fl, fc := perTool(c, 1)
			fmt.Fprintf(&extra, "%s, per extra tool (12 → 150): added p50 floor %s, dragoman %s; CPU floor %s, dragoman %s\n", c.api, us(fl), us(dl), us(fc), us(dc))
		}
		code("Tools (non-stream, 1 connection, interleaved)", cr.latencyTable(cr.tools, "tools")+"\n"+extra.String())
	}
	if len(cr.streams) > 0 {
		code(fmt.Sprintf("Concurrent slow streams (54 KB Messages request; stub paced at %s per event, %d events: each stream held %s; fresh processes per row; per stream = (peak RSS − RSS before) ÷ streams)",
			cr.cs.eventDelay, cr.cs.holdEvents, cr.cs.eventDelay*time.Duration(cr.cs.holdEvents)), cr.streamTable())
	}
	if len(cr.conns) > 0 {
		code("Throughput against connections (chat 54 KB non-stream, closed loop)", cr.connTable())
	}
	if t := goalTable("target (issue 18)", cr.goals()); t != "" {
		code("Targets (issue 18)", t)
	}
	return b.String()
}

// plots draws the curves as SVG files in dir and returns their names.
func (cr *curveResults) plots(dir string) ([]string, error) {
	var names []string
	save := func(p *plot.Plot, name string) error {
		p.Legend.Top = true
		p.Legend.Left = true
		if err := p.Save(16*vg.Centimeter, 10*vg.Centimeter, filepath.Join(dir, name)); err != nil {
			return err
		}
		names = append(names, name)
		return nil
	}
	colors := []color.Color{color.RGBA{0x1f, 0x77, 0xb4, 255}, color.RGBA{0xd6, 0x27, 0x28, 255}, color.RGBA{0x2c, 0xa0, 0x2c, 255}, color.RGBA{0xff, 0x7f, 0x0e, 255}, color.RGBA{0x94, 0x67, 0xbd, 255}}
	type series struct {
		name   string
		xys    plotter.XYs
		dashed bool
	}
	draw1 := func(title, xl, yl string, logX bool, ss []series) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xl, yl
		if logX {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		for i, s := range ss {
			l, pts, err := plotter.NewLinePoints(s.xys)
			if err != nil {
				return nil, err
			}
			c := colors[i%len(colors)]
			l.Color, pts.Color = c, c
			pts.Shape = draw.CircleGlyph{}
			if s.dashed {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l, pts)
			p.Legend.Add(s.name, l, pts)
		}
		p.Y.Min = 0
		return p, nil
	}
	latSeries := func(cs []curve, f func(curvePoint, int) float64) []series {
		var ss []series
		for _, c := range cs {
			for i, via := range []string{"floor", "dragoman"} {
				s := series{name: c.api + ", " + via, dashed: i == 0}
				for _, p := range c.points {
					s.xys = append(s.xys, plotter.XY{X: p.x, Y: f(p, i+1)})
				}
				ss = append(ss, s)
			}
		}
		return ss
	}
	addedP50 := func(p curvePoint, i int) float64 { return ms(p.added(i)) }
	cpu := func(p curvePoint, i int) float64 { return ms(p.via[i].cpu) }
	type fig struct {
		name, title, xl, yl string
		logX                bool
		ss                  []series
	}
	var figs []fig
	if len(cr.sizes) > 0 {
		sz := make([]curve, len(cr.sizes))
		for i, c := range cr.sizes {
			sz[i] = c
			sz[i].points = append([]curvePoint(nil), c.points...)
			for j := range sz[i].points {
				sz[i].points[j].x /= 1000
			}
		}
		figs = append(figs,
			fig{"performance-size-latency.svg", "Added p50 against request size", "request size (kB, log)", "added p50 (µs)", true, latSeries(sz, addedP50)},
			fig{"performance-size-cpu.svg", "Proxy CPU per request against request size", "request size (kB, log)", "CPU per request (µs)", true, latSeries(sz, cpu)})
	}
	if len(cr.tools) > 0 {
		figs = append(figs, fig{"performance-tools.svg", "Added p50 against tools", "tools", "added p50 (µs)", false, latSeries(cr.tools, addedP50)})
	}
	if len(cr.streams) > 0 {
		var rss, gor []series
		for i, via := range []string{"floor", "dragoman"} {
			s, g := series{name: via, dashed: i == 0}, series{name: via, dashed: i == 0}
			for _, p := range cr.streams {
				s.xys = append(s.xys, plotter.XY{X: float64(p.n), Y: float64(p.peakRSS[i]) / (1 << 20)})
				g.xys = append(g.xys, plotter.XY{X: float64(p.n), Y: float64(p.goroutines[i])})
			}
			rss, gor = append(rss, s), append(gor, g)
		}
		figs = append(figs,
			fig{"performance-streams-rss.svg", "Peak RSS against concurrent slow streams", "concurrent streams", "RSS (MB)", false, rss},
			fig{"performance-streams-goroutines.svg", "Goroutines against concurrent slow streams", "concurrent streams", "goroutines", false, gor})
	}
	if len(cr.conns) > 0 {
		var ss []series
		for i, via := range []string{"direct", "floor", "dragoman"} {
			s := series{name: via, dashed: i == 1}
			for _, c := range cr.conns {
				s.xys = append(s.xys, plotter.XY{X: float64(c.c), Y: c.rps[i]})
			}
			ss = append(ss, s)
		}
		figs = append(figs, fig{"performance-connections.svg", "Throughput against connections (chat 54 KB)", "connections (log)", "requests per second", true, ss})
	}
	for _, f := range figs {
		p, err := draw1(f.title, f.xl, f.yl, f.logX, f.ss)
		if err != nil {
			return names, err
		}
		if err := save(p, f.name); err != nil {
			return names, err
		}
	}
	return names, nil
}

// writeCurves draws the plots next to the doc at path and writes the
// curves between their own markers in it.
func writeCurves(path string, cr *curveResults, date time.Time, machine string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	names, err := cr.plots(filepath.Dir(path))
	if err != nil {
		return "", fmt.Errorf("plots: %w", err)
	}
	text := cr.render(date, machine, names)
	return text, writeBlock(path, curvesBegin, curvesEnd, text)
}

// writeBlock puts block between the markers begin and end of the file at
// path, keeping what is around them; a file without them gets them
// appended.
func writeBlock(path, begin, end, block string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	block = begin + "\n\n" + block + "\n" + end
	s := string(old)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	switch {
	case i >= 0 && j > i:
		s = s[:i] + block + s[j+len(end):]
	case len(s) == 0:
		s = "# Performance\n\n" + block + "\n"
	default:
		s = strings.TrimRight(s, "\n") + "\n\n" + block + "\n"
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
