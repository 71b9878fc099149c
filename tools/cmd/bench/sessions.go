package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The sessions scenario (issue 42): coding sessions through a pool of four
// GPU-like stub servers (stub --gpu-slots: slots, an LRU prefix cache,
// prefill time by the tokens not cached, vLLM's /metrics), behind 1 or 3
// Dragoman replicas, each request sent to a random replica as a
// Kubernetes Service does. Every conversation shares a 40 KB system prompt
// and the same tools; a session's main conversation spawns subagents (their
// own conversations, the same session id) and waits for them. The figure
// is the prefill the servers computed over the ideal: each conversation
// prefilled once, the shared prefix once per server.
//
// The time is scaled (a prefill of 2 µs a token, a decode of 250 µs a
// token, 20 ms of tool time between turns, each server's load read every 20 ms: about
// 1/50 to 1/100 of a local model's times, the proxy's 1 s default poll
// scaled alike), and every draw is seeded: the
// workload is the same at every run; the timing of the processes is not.

// sessionsSettings are the scenario's time scale and sizes.
type sessionsSettings struct {
	servers, slots  int
	cacheTokens     int
	prefill, decode time.Duration // per token
	toolTime        time.Duration
	poll            time.Duration // router_settings.load_poll_interval
}

var sessionsScale = sessionsSettings{servers: 4, slots: 4, cacheTokens: 262144,
	prefill: 2 * time.Microsecond, decode: 250 * time.Microsecond, toolTime: 20 * time.Millisecond, poll: 20 * time.Millisecond}

// sessionsWorkload is one size of the scenario.
type sessionsWorkload struct {
	name                     string
	sessions, turns, atATime int
}

// sessionsRouter is a routing under test: a routing_strategy, or the
// reference, a router that sends each session to the server its id
// hashes to (the bench picks one of four single-backend aliases).
type sessionsRouter struct {
	name, strategy string
	hash           bool
}

var sessionsRouters = []sessionsRouter{
	{name: "hash of the session id (reference)", hash: true},
	{name: "session-affinity", strategy: "session-affinity"},
	{name: "least-busy", strategy: "least-busy"},
	{name: "simple-shuffle", strategy: "simple-shuffle"},
}

// sessionsRun is what one run measured.
type sessionsRun struct {
	workload          sessionsWorkload
	router            sessionsRouter
	replicas          int
	requests, errors  int
	prefill, ideal    int64
	ttft              []time.Duration
	convs, convSplit  int // conversations, those served by more than one server
	sessSplit         int // sessions served by more than one server
	maxServers        int // most servers one session touched
	metricMoves       int // dragoman_session_moves_total summed over the replicas
	serverAway        int // requests the servers saw away from their session's main server
	serverTransitions int // a session's request on another server than its previous one
	elapsed           time.Duration
	firstErr          string
	reps              int // runs added up (the saturated ones: 3)
}

func (s *sessionsRun) ratio() float64 {
	if s.ideal == 0 {
		return 0
	}
	return float64(s.prefill) / float64(s.ideal)
}

func (s *sessionsRun) pct(p float64) time.Duration {
	if len(s.ttft) == 0 {
		return 0
	}
	xs := slices.Sorted(slices.Values(s.ttft))
	return xs[min(len(xs)-1, int(p*float64(len(xs))))]
}

// sessionsText is the shared part of every request: the system prompt and
// the tools, the same bytes each time.
type sessionsText struct {
	system string
	tools  []map[string]any
}

func newSessionsText() sessionsText {
	rnd := rand.New(rand.NewPCG(42, 1))
	return sessionsText{system: words(rnd, 40_000), tools: benchTools(rnd)}
}

var vocabulary = strings.Fields("the a file function test error value return package import struct type method call build run check read write config server client request response session token cache prefix model slot queue load metric router backend pool replica home spill")

// words is about n bytes of text drawn from the vocabulary.
func words(rnd *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(vocabulary[rnd.IntN(len(vocabulary))])
		if rnd.IntN(12) == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// benchTools are 16 tool definitions of about 600 bytes each.
func benchTools(rnd *rand.Rand) []map[string]any {
	var out []map[string]any
	for i := range 16 {
		out = append(out, map[string]any{
			"name":        fmt.Sprintf("tool_%02d", i),
			"description": words(rnd, 400),
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{
				"path": map[string]any{"type": "string", "description": words(rnd, 80)},
				"text": map[string]any{"type": "string", "description": words(rnd, 80)},
			}, "required": []string{"path"}},
		})
	}
	return out
}

// conversation is one main conversation or subagent of a session.
type conversation struct {
	id       string
	session  string
	msgs     []map[string]any
	rnd      *rand.Rand
	replicas []string // Dragoman URLs
	alias    string
	lastIn   int // prompt tokens of the last request
}

// sessionsClient sends the scenario's requests and records what it saw.
type sessionsClient struct {
	text   sessionsText
	client *http.Client
	mu     sync.Mutex
	ttft   []time.Duration
	errs   int
	first  string
	reqs   int
	convs  []*conversation
	tagOf  map[string]string // tag → session
}

func (c *sessionsClient) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs++
	if c.first == "" {
		c.first = err.Error()
	}
}

// turn sends the conversation's next request: a user message (a task or
// a tool result), streamed; the answer joins the conversation.
func (c *sessionsClient) turn(cv *conversation, n int, user string) {
	tag := cv.id + "/" + strconv.Itoa(n)
	reply := 100 + cv.rnd.IntN(300)
	cv.msgs = append(cv.msgs, map[string]any{"role": "user", "content": user + fmt.Sprintf("\ngpu:reply=%d gpu:tag=%s", reply, tag)})
	body, _ := json.Marshal(map[string]any{"model": cv.alias, "max_tokens": 4096, "stream": true,
		"system": []any{map[string]any{"type": "text", "text": c.text.system}}, "tools": c.text.tools, "messages": cv.msgs})
	url := cv.replicas[cv.rnd.IntN(len(cv.replicas))]
	c.mu.Lock()
	c.tagOf[tag] = cv.session
	c.reqs++
	c.mu.Unlock()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", bytes.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + clientKey},
		"Anthropic-Version": {"2023-06-01"}, "X-Claude-Code-Session-Id": {cv.session}}
	start := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		c.fail(err)
		cv.msgs = append(cv.msgs, map[string]any{"role": "assistant", "content": "(failed)"})
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.fail(fmt.Errorf("status %d: %.200s", resp.StatusCode, b))
		cv.msgs = append(cv.msgs, map[string]any{"role": "assistant", "content": "(failed)"})
		return
	}
	var text strings.Builder
	var ttft time.Duration
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
			Usage   *sessionsUsage `json:"usage"`
			Message struct {
				Usage *sessionsUsage `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "content_block_delta":
			if ttft == 0 {
				ttft = time.Since(start)
			}
			text.WriteString(ev.Delta.Text)
		case "message_start":
			if u := ev.Message.Usage; u != nil && u.total() > 0 {
				cv.lastIn = u.total()
			}
		case "message_delta":
			if u := ev.Usage; u != nil && u.total() > 0 {
				cv.lastIn = u.total()
			}
		case "error":
			c.fail(fmt.Errorf("stream error: %.200s", data))
		}
	}
	if err := sc.Err(); err != nil || ttft == 0 {
		c.fail(fmt.Errorf("stream of %s ended without text (%v)", tag, err))
	}
	c.mu.Lock()
	c.ttft = append(c.ttft, ttft)
	c.mu.Unlock()
	cv.msgs = append(cv.msgs, map[string]any{"role": "assistant", "content": text.String()})
}

type sessionsUsage struct {
	Input     int `json:"input_tokens"`
	CacheRead int `json:"cache_read_input_tokens"`
}

func (u *sessionsUsage) total() int { return u.Input + u.CacheRead }

func (c *sessionsClient) newConv(id, session string, replicas []string, alias string, seed uint64) *conversation {
	cv := &conversation{id: id, session: session, rnd: rand.New(rand.NewPCG(seed, 7)), replicas: replicas, alias: alias}
	c.mu.Lock()
	c.convs = append(c.convs, cv)
	c.mu.Unlock()
	return cv
}

// session runs one coding session: turns of its main conversation, with
// subagents at some turns (one or two at turn 1, one in four at every
// third turn after), which run three turns each in parallel while the
// main conversation waits.
func (c *sessionsClient) session(i, turns int, replicas []string, alias func(session string) string) {
	session := fmt.Sprintf("%08x-4a3f-4eb6-a37f-%012d", i*2654435761%(1<<32), i)
	main := c.newConv(fmt.Sprintf("s%d", i), session, replicas, alias(session), uint64(i))
	for t := range turns {
		user := "Task: " + words(main.rnd, 2000)
		if t > 0 {
			user = "Tool result:\n" + words(main.rnd, 4000+main.rnd.IntN(12000))
		}
		c.turn(main, t, user)
		subs := 0
		switch {
		case t == 1:
			subs = 1 + main.rnd.IntN(2)
		case t > 1 && t%3 == 1 && main.rnd.IntN(4) == 0:
			subs = 1
		}
		var wg sync.WaitGroup
		for k := range subs {
			sub := c.newConv(fmt.Sprintf("s%d.t%d.a%d", i, t, k), session, replicas, alias(session), uint64(i)<<20|uint64(t)<<8|uint64(k))
			wg.Go(func() {
				for st := range 3 {
					user := "Subagent task: " + words(sub.rnd, 1000)
					if st > 0 {
						user = "Tool result:\n" + words(sub.rnd, 3000+sub.rnd.IntN(5000))
					}
					c.turn(sub, st, user)
					time.Sleep(sessionsScale.toolTime)
				}
			})
		}
		wg.Wait()
		time.Sleep(sessionsScale.toolTime)
	}
}

// gpuStats is a stub's GET /_stub/gpu.
type gpuStats struct {
	PrefillTokens int64    `json:"prefill_tokens"`
	Requests      int64    `json:"requests"`
	Tags          []string `json:"tags"`
}

func readGPU(url string) (gpuStats, error) {
	var g gpuStats
	resp, err := http.Get(url + "/_stub/gpu")
	if err != nil {
		return g, err
	}
	defer resp.Body.Close()
	return g, json.NewDecoder(resp.Body).Decode(&g)
}

// gpuStubs starts the pool's servers.
func (r *runner) gpuStubs(name string) ([]*proc, error) {
	var out []*proc
	sc := sessionsScale
	for i := range sc.servers {
		s, err := r.stub(fmt.Sprintf("%s-gpu-%d", name, i), "--gpu-slots", itoa(sc.slots), "--gpu-cache-tokens", itoa(sc.cacheTokens),
			"--gpu-prefill-per-token", sc.prefill.String(), "--gpu-decode-per-token", sc.decode.String())
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// sessionsConfig is a Dragoman config of the pool "coder" on the stubs
// (each with max_parallel_requests at its slots, server vLLM), and for
// the reference, an alias "coder-N" of each stub alone.
func (r *runner) sessionsConfig(name string, stubs []*proc, strategy string) (string, error) {
	var b strings.Builder
	b.WriteString("model_list:\n")
	for i, s := range stubs {
		fmt.Fprintf(&b, "  - model_name: coder\n    proxy_params: {model: vendorb/%s, api_base: '%s/v1', api_key: none, name: gpu-%d, max_parallel_requests: %d, server: vLLM}\n", backendModel, s.url, i, sessionsScale.slots)
	}
	for i, s := range stubs {
		fmt.Fprintf(&b, "  - model_name: coder-%d\n    proxy_params: {model: vendorb/%s, api_base: '%s/v1', api_key: none, name: gpu-%d, max_parallel_requests: %d, server: vLLM}\n", i, backendModel, s.url, i, sessionsScale.slots)
	}
	if strategy == "" {
		strategy = "session-affinity"
	}
	b.WriteString("general_settings: {enable_vendora_pass_through: true}\n")
	fmt.Fprintf(&b, "router_settings: {routing_strategy: %s, load_poll_interval: %g, queue_timeout: 300, health_check_interval: 0}\n", strategy, sessionsScale.poll.Seconds())
	path := filepath.Join(r.dir, name+".yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// sharedTokens is the shared prefix in the servers' tokens (whole blocks):
// the cache a second conversation finds on a server that saw one.
func (r *runner) sharedTokens(text sessionsText) (int, error) {
	defer r.stopAll()
	stubs, err := r.gpuStubs("calibrate")
	if err != nil {
		return 0, err
	}
	cfg, err := r.sessionsConfig("calibrate", stubs[:1], "")
	if err != nil {
		return 0, err
	}
	dm, err := r.dragomanOn("calibrate-dragoman", cfg, "warn")
	if err != nil {
		return 0, err
	}
	c := &sessionsClient{text: text, client: http.DefaultClient, tagOf: map[string]string{}}
	var got [2]int
	for i := range 2 {
		cv := c.newConv(fmt.Sprint("calibrate-", i), fmt.Sprint("calibrate-", i), []string{dm.url}, "coder", uint64(i))
		c.turn(cv, 0, fmt.Sprint("first message ", i))
		got[i] = cv.lastIn
	}
	if c.errs > 0 {
		return 0, fmt.Errorf("calibration: %s", c.first)
	}
	g, err := readGPU(stubs[0].url)
	if err != nil {
		return 0, err
	}
	// prefill = both prompts less the cached shared part
	shared := int64(got[0]+got[1]) - g.PrefillTokens
	if shared <= 0 || shared > int64(got[0]) {
		return 0, fmt.Errorf("calibration: prompts %v tokens, prefill %d: the shared prefix was not cached (is the translation stable?)", got, g.PrefillTokens)
	}
	return int(shared), nil
}

// sessionsOne runs one workload through one router and n replicas.
func (r *runner) sessionsOne(w sessionsWorkload, rt sessionsRouter, replicas int, text sessionsText, shared int) (*sessionsRun, error) {
	defer r.stopAll()
	name := fmt.Sprintf("sessions-%s-%s-%d", w.name, strings.Fields(rt.name)[0], replicas)
	stubs, err := r.gpuStubs(name)
	if err != nil {
		return nil, err
	}
	cfg, err := r.sessionsConfig(name, stubs, rt.strategy)
	if err != nil {
		return nil, err
	}
	var urls []string
	for i := range replicas {
		dm, err := r.dragomanOn(fmt.Sprintf("%s-dragoman-%d", name, i), cfg, "warn")
		if err != nil {
			return nil, err
		}
		urls = append(urls, dm.url)
	}
	alias := func(string) string { return "coder" }
	if rt.hash {
		alias = func(session string) string {
			h := fnv.New64a()
			h.Write([]byte(session))
			return fmt.Sprintf("coder-%d", h.Sum64()%uint64(len(stubs)))
		}
	}
	c := &sessionsClient{text: text, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}, Timeout: 10 * time.Minute}, tagOf: map[string]string{}}
	defer c.client.CloseIdleConnections()
	start := time.Now()
	next := make(chan int)
	var wg sync.WaitGroup
	for k := range w.atATime {
		wg.Go(func() {
			// The first sessions start a tool time apart, as users do, not
			// in one burst.
			time.Sleep(time.Duration(k) * sessionsScale.toolTime)
			for i := range next {
				c.session(i, w.turns, urls, alias)
			}
		})
	}
	for i := range w.sessions {
		next <- i
	}
	close(next)
	wg.Wait()
	res := &sessionsRun{workload: w, router: rt, replicas: replicas, elapsed: time.Since(start), requests: c.reqs, errors: c.errs, firstErr: c.first, ttft: c.ttft}
	// Where each request went, from the servers' own records.
	serverOf := map[string]int{}
	used := 0
	for i, s := range stubs {
		g, err := readGPU(s.url)
		if err != nil {
			return nil, err
		}
		res.prefill += g.PrefillTokens
		if g.Requests > 0 {
			used++
		}
		for _, t := range g.Tags {
			serverOf[t] = i
		}
	}
	res.ideal = int64(used * shared)
	res.convs = len(c.convs)
	// Per session, its requests in the order they were sent (tags hold
	// conversation and turn; a session's requests never overlap but for
	// subagents, whose order among themselves does not matter here).
	perSession := map[string][]int{}
	var order []string
	for _, cv := range c.convs {
		res.ideal += int64(cv.lastIn - shared)
		servers := map[int]bool{}
		for t := range len(cv.msgs) / 2 {
			if s, ok := serverOf[cv.id+"/"+strconv.Itoa(t)]; ok {
				servers[s] = true
				if _, seen := perSession[cv.session]; !seen {
					order = append(order, cv.session)
				}
				perSession[cv.session] = append(perSession[cv.session], s)
			}
		}
		if len(servers) > 1 {
			res.convSplit++
		}
	}
	for _, sess := range order {
		list := perSession[sess]
		count := map[int]int{}
		for k, s := range list {
			count[s]++
			if k > 0 && s != list[k-1] {
				res.serverTransitions++
			}
		}
		mainCount := 0
		for _, n := range count {
			mainCount = max(mainCount, n)
		}
		res.serverAway += len(list) - mainCount
		if len(count) > 1 {
			res.sessSplit++
		}
		res.maxServers = max(res.maxServers, len(count))
	}
	for _, u := range urls {
		n, err := sessionMoves(u)
		if err != nil {
			return nil, err
		}
		res.metricMoves += n
	}
	return res, nil
}

// sessionMoves sums dragoman_session_moves_total at a replica.
func sessionMoves(url string) (int, error) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "dragoman_session_moves_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("reading %s/metrics: %q", url, line)
		}
		sum += v
	}
	return int(sum), sc.Err()
}

// sessionsResult is the whole scenario.
type sessionsResult struct {
	shared int
	runs   []*sessionsRun
}

// sessions runs the scenario: each workload through each router (the
// strategies through 1 and 3 replicas, the reference once), then the
// saturated pool (twice as many sessions at once as slots) through
// session-affinity and least-busy.
func (r *runner) sessions(quick bool, filter string) (*sessionsResult, error) {
	text := newSessionsText()
	shared, err := r.sharedTokens(text)
	if err != nil {
		return nil, err
	}
	res := &sessionsResult{shared: shared}
	slots := sessionsScale.servers * sessionsScale.slots
	workloads := []sessionsWorkload{{"24×6", 24, 6, 8}, {"48×10", 48, 10, 8}}
	saturated := sessionsWorkload{"saturated", 4 * slots, 6, 2 * slots}
	if quick {
		workloads = []sessionsWorkload{{"8×3", 8, 3, 4}}
		saturated = sessionsWorkload{"saturated", 2 * slots, 3, 2 * slots}
	}
	run := func(w sessionsWorkload, rt sessionsRouter, n int) error {
		if filter != "" && !strings.Contains(fmt.Sprintf("%s %s %d", w.name, rt.name, n), filter) {
			return nil
		}
		progress("sessions %s: %s through %d replica(s)", w.name, rt.name, n)
		one, err := r.sessionsOne(w, rt, n, text, shared)
		if err != nil {
			return err
		}
		res.runs = append(res.runs, one)
		return nil
	}
	for _, w := range workloads {
		for _, rt := range sessionsRouters {
			for _, n := range []int{3, 1} {
				if rt.hash && n == 3 {
					continue // the reference chooses the server itself
				}
				if err := run(w, rt, n); err != nil {
					return nil, err
				}
			}
		}
	}
	// The saturated runs, whose TTFT is mostly queueing and so the most
	// sensitive to the machine's load, go three times, interleaved; each
	// pair's figures are over the three.
	reps := 3
	if quick {
		reps = 1
	}
	before := len(res.runs)
	for range reps {
		for _, rt := range sessionsRouters[1:3] {
			for _, n := range []int{3, 1} {
				if err := run(saturated, rt, n); err != nil {
					return nil, err
				}
			}
		}
	}
	res.runs = append(res.runs[:before], mergeRuns(res.runs[before:])...)
	return res, nil
}

// mergeRuns adds up the runs of one workload, router and replicas.
func mergeRuns(runs []*sessionsRun) []*sessionsRun {
	var out []*sessionsRun
	for _, r := range runs {
		var m *sessionsRun
		for _, o := range out {
			if o.workload == r.workload && o.router == r.router && o.replicas == r.replicas {
				m = o
			}
		}
		if m == nil {
			c := *r
			c.ttft = slices.Clone(r.ttft)
			c.reps = 1
			out = append(out, &c)
			continue
		}
		m.reps++
		m.requests += r.requests
		m.errors += r.errors
		if m.firstErr == "" {
			m.firstErr = r.firstErr
		}
		m.prefill += r.prefill
		m.ideal += r.ideal
		m.ttft = append(m.ttft, r.ttft...)
		m.convs += r.convs
		m.convSplit += r.convSplit
		m.sessSplit += r.sessSplit
		m.maxServers = max(m.maxServers, r.maxServers)
		m.metricMoves += r.metricMoves
		m.serverAway += r.serverAway
		m.serverTransitions += r.serverTransitions
		m.elapsed += r.elapsed
	}
	return out
}

func (s *sessionsResult) text() string {
	var b strings.Builder
	sc := sessionsScale
	fmt.Fprintf(&b, "sessions through a pool (issue 42): %d GPU stubs of %d slots, prefix cache %d tokens, prefill %s/token, decode %s/token, tool time %s, load read every %s; shared prefix %d tokens\n",
		sc.servers, sc.slots, sc.cacheTokens, sc.prefill, sc.decode, sc.toolTime, sc.poll, s.shared)
	var rows []row
	for _, r := range s.runs {
		rep := strconv.Itoa(r.replicas)
		if r.router.hash {
			rep = "—"
		}
		moves := "—"
		if !r.router.hash && r.router.strategy == "session-affinity" {
			moves = fmt.Sprintf("%d / %d (%d)", r.metricMoves, r.serverAway, r.serverTransitions)
		}
		errs := strconv.Itoa(r.errors)
		if r.errors > 0 {
			errs += ": " + r.firstErr
		}
		what := fmt.Sprintf("%s, %d at a time", r.workload.name, r.workload.atATime)
		if r.reps > 1 {
			what += fmt.Sprintf(", %d runs", r.reps)
		}
		rows = append(rows, row{
			what, r.router.name, rep,
			strconv.FormatFloat(r.ratio(), 'f', 2, 64),
			msec(r.pct(0.5)), msec(r.pct(0.9)),
			fmt.Sprintf("%d of %d", r.convSplit, r.convs),
			fmt.Sprintf("%d (≤ %d servers)", r.sessSplit, r.maxServers),
			moves, strconv.Itoa(r.requests), errs, fmt.Sprintf("%.1f s", r.elapsed.Seconds()),
		})
	}
	b.WriteString(table(row{"workload", "routing", "replicas", "prefill / ideal", "TTFT p50", "TTFT p90", "conversations on >1 server", "sessions on >1 server", "moves: metric / servers (transitions)", "requests", "errors", "took"}, rows))
	return b.String()
}

// goals are issue 42's must-shows that the scenario measures.
func (s *sessionsResult) goals() []goal {
	var out []goal
	find := func(w, strategy string, n int) *sessionsRun {
		for _, r := range s.runs {
			if r.workload.name == w && r.router.strategy == strategy && !r.router.hash && r.replicas == n {
				return r
			}
		}
		return nil
	}
	for _, r := range s.runs {
		if r.router.strategy == "session-affinity" && r.workload.name != "saturated" {
			out = append(out, goal{what: fmt.Sprintf("session-affinity, %s, %d replica(s): prefill / ideal", r.workload.name, r.replicas),
				limit: "≤ 1.15", got: strconv.FormatFloat(r.ratio(), 'f', 2, 64), met: r.ratio() <= 1.15 && r.errors == 0})
		}
	}
	for _, n := range []int{3, 1} {
		a, l := find("saturated", "session-affinity", n), find("saturated", "least-busy", n)
		if a != nil && l != nil {
			out = append(out, goal{what: fmt.Sprintf("saturated, %d replica(s): session-affinity's TTFT p90 against least-busy's, errors", n),
				limit: "≤ 1.1×, none", got: fmt.Sprintf("%s vs %s (%.2f×), %d errors", msec(a.pct(0.9)), msec(l.pct(0.9)), float64(a.pct(0.9))/float64(l.pct(0.9)), a.errors+l.errors),
				met: float64(a.pct(0.9)) <= 1.1*float64(l.pct(0.9)) && a.errors+l.errors == 0})
		}
	}
	for _, r := range s.runs {
		if r.router.strategy == "session-affinity" && r.replicas == 3 {
			d := r.metricMoves - r.serverAway
			out = append(out, goal{what: fmt.Sprintf("%s, 3 replicas: dragoman_session_moves_total summed against the requests the servers saw away from their session's server", r.workload.name),
				limit: "within ¼", got: fmt.Sprintf("%d vs %d", r.metricMoves, r.serverAway), met: 4*max(d, -d) <= r.serverAway || (r.metricMoves == 0 && r.serverAway == 0)})
		}
	}
	return out
}

func msec(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}
