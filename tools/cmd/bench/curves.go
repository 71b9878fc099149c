package main

import (
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/dragoman-dev/dragoman/tools/internal/procs"
)

// The curves: how what Dragoman adds grows with request size, tools,
// concurrent slow streams and connections, each measured beside the floor
// in one interleaved run (issue 18).

// curveSettings are the curves' sizes; --quick shrinks them.
type curveSettings struct {
	requests    map[string]int // requests per target per point, by size label
	toolReqs    int
	streams     []int
	holdEvents  int           // events per slow stream (× eventDelay = how long it is held)
	eventDelay  time.Duration // the stub's pace
	coldStreams int           // streams waiting on a cold backend
	coldWait    time.Duration
	conns       []int
}

func curvesFull() curveSettings {
	return curveSettings{
		requests:    map[string]int{"8 KB": 400, "54 KB": 400, "200 KB": 200, "1 MB": 200},
		toolReqs:    300,
		streams:     []int{256, 1000, 4000},
		holdEvents:  600, // 30 s at 50 ms
		eventDelay:  50 * time.Millisecond,
		coldStreams: 1000,
		coldWait:    20 * time.Second,
		conns:       []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
	}
}

func curvesQuick() curveSettings {
	return curveSettings{
		requests:    map[string]int{"8 KB": 20, "54 KB": 20, "200 KB": 10, "1 MB": 6},
		toolReqs:    10,
		streams:     []int{64, 256},
		holdEvents:  40, // 2 s
		eventDelay:  50 * time.Millisecond,
		coldStreams: 64,
		coldWait:    3 * time.Second,
		conns:       []int{1, 16, 256},
	}
}

// curvePoint is one x of a latency curve: direct, floor and Dragoman.
type curvePoint struct {
	label string
	x     float64 // bytes or tools
	size  int     // bytes Dragoman receives
	via   [3]latency
}

func (p curvePoint) added(i int) time.Duration   { return p.via[i].p50 - p.via[0].p50 }
func (p curvePoint) added99(i int) time.Duration { return p.via[i].p99 - p.via[0].p99 }

type curve struct {
	api    string
	points []curvePoint
}

// streamPoint is one number of concurrent streams, floor and Dragoman.
type streamPoint struct {
	n          int
	peakRSS    [2]int64 // VmRSS, the highest seen while the streams were open
	hwm        [2]int64 // VmHWM at the end
	idle       [2]int64 // VmRSS before the streams
	goroutines [2]int   // the most seen
	done       [2]int   // streams that ended well
}

type connPoint struct {
	c   int
	rps [3]float64
}

type curveResults struct {
	sizes   []curve
	tools   []curve
	streams []streamPoint
	cold    *streamPoint
	conns   []connPoint
	cs      curveSettings
	nofile  string
	quick   bool
}

// raiseNoFile lifts this process's open-file limit to its hard limit; the
// processes it starts inherit it. 4,000 streams need ~8,000 descriptors
// in the proxy and as many here.
func raiseNoFile() string {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	was := l.Cur
	l.Cur = l.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Sprintf("%d (raising it failed: %v)", was, err)
	}
	return fmt.Sprintf("raised from %d to %d (the hard limit)", was, l.Cur)
}

func (r *runner) curves(which map[string]bool, cs curveSettings) (*curveResults, error) {
	res := &curveResults{cs: cs, nofile: raiseNoFile()}
	fb, err := loadFixtureBody()
	if err != nil {
		return nil, fmt.Errorf("fixture: %w", err)
	}
	_, header, err := clientRequest("03-tool-result-turn.json")
	if err != nil {
		return nil, err
	}
	header.Set("Authorization", "Bearer "+clientKey)

	if which["size"] || which["tools"] || which["conns"] {
		stub, fl, dm, err := r.chain("-curve", "--events", "64")
		if err != nil {
			return nil, err
		}
		r.stubURL = stub.url
		pids := []int{stub.pid(), fl.pid(), dm.pid()}
		point := func(k *kase, n int) (curvePoint, error) {
			ts := k.targets(stub.url, fl.url, dm.url)
			for _, t := range ts {
				if err := check(r.gen, t, false); err != nil {
					return curvePoint{}, fmt.Errorf("%s via %s: %w", k.name, t.name, err)
				}
			}
			saved := r.st
			r.st.batch = min(20, n)
			r.st.rounds = max(1, n/r.st.batch)
			r.st.warm = max(2, n/10)
			samples, cpu := r.interleaved(ts[:], pids)
			r.st = saved
			p := curvePoint{label: k.name, size: k.size}
			for i := range ts {
				p.via[i] = summarize(samples[i])
				p.via[i].cpu = cpu[i]
			}
			progress("  %-34s added p50: floor %s, dragoman %s; CPU/req floor %s, dragoman %s", k.name,
				us(p.added(1)), us(p.added(2)), us(p.via[1].cpu), us(p.via[2].cpu))
			return p, nil
		}
		if which["size"] {
			progress("curve: request size (non-stream, 1 connection, interleaved)")
			sizes := []struct {
				label string
				bytes int
				small bool
			}{{"8 KB", 0, true}, {"54 KB", 0, false}, {"200 KB", 200_000, false}, {"1 MB", 1_000_000, false}}
			for _, api := range []string{"chat", "messages"} {
				c := curve{api: api}
				for _, s := range sizes {
					k, err := fb.curveCase(api+" "+s.label, api, s.bytes, s.small, 0, false, header)
					if err != nil {
						return nil, err
					}
					p, err := point(k, cs.requests[s.label])
					if err != nil {
						return nil, err
					}
					p.label, p.x = s.label, float64(k.size)
					c.points = append(c.points, p)
				}
				res.sizes = append(res.sizes, c)
			}
		}
		if which["tools"] {
			progress("curve: tools (non-stream, 1 connection, interleaved)")
			for _, api := range []string{"messages", "chat"} {
				c := curve{api: api}
				for _, n := range []int{12, 50, 150} {
					k, err := fb.curveCase(api+" "+itoa(n)+" tools", api, 0, false, n, false, header)
					if err != nil {
						return nil, err
					}
					p, err := point(k, cs.toolReqs)
					if err != nil {
						return nil, err
					}
					p.label, p.x = itoa(n), float64(n)
					c.points = append(c.points, p)
				}
				res.tools = append(res.tools, c)
			}
		}
		if which["conns"] {
			progress("curve: throughput against connections (chat 54 KB non-stream)")
			k, err := fb.curveCase("chat 54 KB", "chat", 0, false, 0, false, header)
			if err != nil {
				return nil, err
			}
			ts := k.targets(stub.url, fl.url, dm.url)
			for _, c := range cs.conns {
				rps, _ := r.throughput(ts[:], pids, c)
				cp := connPoint{c: c}
				copy(cp.rps[:], rps)
				res.conns = append(res.conns, cp)
				progress("  c=%-4d rps: direct %.0f, floor %.0f, dragoman %.0f", c, rps[0], rps[1], rps[2])
			}
		}
		r.stopAll()
		r.stubURL = ""
	}
	if which["streams"] {
		k, err := fb.curveCase("messages 54 KB stream", "messages", 0, false, 0, true, header)
		if err != nil {
			return nil, err
		}
		progress("curve: concurrent slow streams (stub paced at %s per event, %d events), file limit %s", cs.eventDelay, cs.holdEvents, res.nofile)
		for _, n := range cs.streams {
			p, err := r.streamPoint(k, n, "--events", itoa(cs.holdEvents), "--pad-events", "--event-delay", cs.eventDelay.String())
			if err != nil {
				return nil, err
			}
			res.streams = append(res.streams, p)
		}
		progress("curve: streams waiting on a cold backend (first byte after %s)", cs.coldWait)
		p, err := r.streamPoint(k, cs.coldStreams, "--events", "8", "--first-token-delay", cs.coldWait.String())
		if err != nil {
			return nil, err
		}
		res.cold = &p
	}
	return res, nil
}

// streamPoint opens n streams at once through a fresh floor, then through
// a fresh Dragoman, in front of a fresh stub started with stubArgs, and
// watches each proxy's resident set and goroutines while they are open.
func (r *runner) streamPoint(k *kase, n int, stubArgs ...string) (streamPoint, error) {
	defer r.stopAll()
	p := streamPoint{n: n}
	stub, err := r.stub("streams-stub", stubArgs...)
	if err != nil {
		return p, err
	}
	fl, err := r.floor("streams-floor", stub)
	if err != nil {
		return p, err
	}
	pprofPort, err := procs.FreePort()
	if err != nil {
		return p, err
	}
	pprof := "127.0.0.1:" + itoa(pprofPort)
	cfg, err := dragomanConfig(r.dir, "streams-dragoman", stub.url, r.dmConfig)
	if err != nil {
		return p, err
	}
	dm, err := r.launch("streams-dragoman", append([]string{"PROXY_API_KEY=" + clientKey}, r.dmEnv...), r.proxyBin,
		"--config", cfg, "--host", "127.0.0.1", "--port", "PORT", "--log-level", "warn", "--pprof", pprof)
	if err != nil {
		return p, err
	}
	goroutineURLs := [2]string{fl.url + "/debug/goroutines", "http://" + pprof + "/debug/pprof/goroutine?debug=1"}
	ts := k.targets(stub.url, fl.url, dm.url)
	for i, pr := range []*proc{fl, dm} {
		st, _ := procs.ReadStatus(pr.pid())
		p.idle[i] = st.RSS
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if st, err := procs.ReadStatus(pr.pid()); err == nil {
					p.peakRSS[i] = max(p.peakRSS[i], st.RSS)
				}
				if g, err := procs.Goroutines(goroutineURLs[i]); err == nil {
					p.goroutines[i] = max(p.goroutines[i], g)
				}
			}
		}()
		samples, _, _ := r.gen.run(ts[i+1], n, n, 0)
		close(stop)
		wg.Wait()
		st, _ = procs.ReadStatus(pr.pid())
		p.hwm[i] = st.HWM
		p.done[i] = len(samples)
		procs.ClearStub(stub.url)
	}
	progress("  %5d streams: floor RSS %s (%d goroutines, %d done), dragoman RSS %s (%d goroutines, %d done)",
		n, mib(p.peakRSS[0]), p.goroutines[0], p.done[0], mib(p.peakRSS[1]), p.goroutines[1], p.done[1])
	return p, nil
}
