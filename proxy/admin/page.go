package admin

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/keys"
)

//go:embed assets/*.html assets/style.css
var assets embed.FS

var (
	templates = template.Must(template.New("").Funcs(template.FuncMap{"num": formatCount}).ParseFS(assets, "assets/*.html"))
	styleCSS  = mustRead("assets/style.css")
)

func mustRead(name string) []byte {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return b
}

type loginView struct{ Error string }

type pageView struct {
	CSRF     string
	Now      string
	Keys     []keyRow
	ByKey    chart
	ByBack   chart
	Backends []backendRow
	Error    string
}

type keyRow struct {
	Name, State, Models, RPM, TPM, Budget, Expires string
	Today, Week                                    keys.Usage
	Active                                         bool
}

type backendRow struct {
	Name, State, Aliases, APIBase, LastError string
	InFlight, Queued                         int
	Requests, Failures                       uint64
	Healthy                                  bool
}

func (a *Admin) render(w http.ResponseWriter, name string, v any) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, v); err != nil {
		a.log.Error("admin: rendering", "page", name, "err", err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make the forms' Origin "null"
	w.Write(b.Bytes())
}

func (a *Admin) page(w http.ResponseWriter, r *http.Request) {
	_, s, ok := a.sessionOf(r)
	if !ok {
		a.render(w, "login", loginView{})
		return
	}
	v, err := a.view(r, s)
	if err != nil {
		a.log.Warn("admin: reading the store", "err", err)
		v.Error = "The database did not answer: " + err.Error()
	}
	a.render(w, "page", v)
}

func (a *Admin) view(r *http.Request, s session) (pageView, error) {
	ctx := r.Context()
	now := a.gate.Now()
	v := pageView{CSRF: s.csrf, Now: now.UTC().Format("2006-01-02 15:04 UTC")}
	for _, b := range a.backends() {
		v.Backends = append(v.Backends, backendRow{Name: b.Name, State: b.State, Aliases: strings.Join(b.Aliases, ", "), APIBase: b.APIBase,
			LastError: b.LastError, InFlight: b.InFlight, Queued: b.Queued, Requests: b.Requests, Failures: b.Failures, Healthy: b.State == "healthy"})
	}
	store := a.gate.Store()
	list, err := store.List(ctx)
	if err != nil {
		return v, err
	}
	today, err := store.UsageSince(ctx, now.UTC().Truncate(24*time.Hour))
	if err != nil {
		return v, err
	}
	week, err := store.UsageSince(ctx, now.Add(-7*24*time.Hour))
	if err != nil {
		return v, err
	}
	for _, k := range list {
		row := keyRow{Name: k.Name, Models: "all", RPM: limit(k.RPM), TPM: limit(k.TPM), Budget: "-", Expires: "never",
			Today: today[k.Name], Week: week[k.Name], State: "active", Active: true}
		if len(k.Models) > 0 {
			row.Models = strings.Join(k.Models, ", ")
		}
		if k.BudgetTokens > 0 {
			row.Budget = formatCount(k.BudgetTokens) + " / " + keys.FormatPeriod(k.BudgetPeriod)
		}
		if !k.ExpiresAt.IsZero() {
			row.Expires = k.ExpiresAt.Format("2006-01-02 15:04")
		}
		switch {
		case k.Revoked():
			row.State, row.Active = "revoked", false
		case k.Expired(now):
			row.State, row.Active = "expired", false
		}
		v.Keys = append(v.Keys, row)
	}
	since := now.Add(-23 * time.Hour)
	byKey, err := store.TokensPerHour(ctx, since, now, "key")
	if err != nil {
		return v, err
	}
	byBackend, err := store.TokensPerHour(ctx, since, now, "backend")
	if err != nil {
		return v, err
	}
	v.ByKey = newChart("Tokens per hour by key, last 24 hours", byKey, since)
	v.ByBack = newChart("Tokens per hour by backend, last 24 hours", byBackend, since)
	return v, nil
}

func limit(n int64) string {
	if n == 0 {
		return "-"
	}
	return formatCount(n)
}

// formatCount writes a count with thin groups: 1 234 567.
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// chart is a stacked bar chart of tokens per hour, drawn as SVG shapes
// the template writes out.
type chart struct {
	Title         string
	Width, Height int
	Bars          []bar
	Ticks         []tick
	Legend        []legendItem
	Empty         bool
	Max           string
}

type bar struct {
	X, Y, W, H int
	Color      string
	Title      string
}

type tick struct {
	X     int
	Label string
}

type legendItem struct {
	X      int
	Color  string
	Label  string
	Tokens string
}

// palette: colours told apart by colour-blind readers too (Okabe-Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"}

const (
	chartW, chartH = 760, 220
	plotTop        = 10
	plotBottom     = 180
	plotLeft       = 40
)

// maxSeries is how many lines a chart shows; the rest are summed as
// "other".
const maxSeries = 7

func newChart(title string, series []keys.Series, since time.Time) chart {
	c := chart{Title: title, Width: chartW, Height: chartH}
	if len(series) > maxSeries {
		other := keys.Series{Label: "other", Tokens: make([]int64, len(series[0].Tokens))}
		for _, s := range series[maxSeries-1:] {
			for i, n := range s.Tokens {
				other.Tokens[i] += n
			}
		}
		series = append(series[:maxSeries-1:maxSeries-1], other)
	}
	hours := 24
	if len(series) > 0 {
		hours = len(series[0].Tokens)
	}
	totals := make([]int64, hours)
	for _, s := range series {
		for i, n := range s.Tokens {
			totals[i] += n
		}
	}
	var top int64
	for _, t := range totals {
		top = max(top, t)
	}
	c.Empty = top == 0
	c.Max = formatCount(top)
	slot := (chartW - plotLeft - 10) / hours
	start := since.UTC().Truncate(time.Hour)
	for h := 0; h < hours; h++ {
		if h%3 == 0 {
			c.Ticks = append(c.Ticks, tick{X: plotLeft + h*slot + slot/2, Label: start.Add(time.Duration(h) * time.Hour).Format("15h")})
		}
		if top == 0 {
			continue
		}
		y := plotBottom
		for i, s := range series {
			n := s.Tokens[h]
			if n == 0 {
				continue
			}
			height := int(float64(n) / float64(top) * float64(plotBottom-plotTop))
			height = max(height, 1)
			y -= height
			c.Bars = append(c.Bars, bar{X: plotLeft + h*slot + 1, Y: y, W: slot - 2, H: height, Color: palette[i%len(palette)],
				Title: fmt.Sprintf("%s, %s: %s tokens", s.Label, start.Add(time.Duration(h)*time.Hour).Format("15:04"), formatCount(n))})
		}
	}
	x := plotLeft
	for i, s := range series {
		var sum int64
		for _, n := range s.Tokens {
			sum += n
		}
		c.Legend = append(c.Legend, legendItem{X: x, Color: palette[i%len(palette)], Label: s.Label, Tokens: formatCount(sum)})
		x += 14 + 8*len(s.Label) + 8*len(formatCount(sum)) + 30
	}
	return c
}
