package balance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/kind"
)

type granted struct {
	name  string
	lease *Lease
	err   error
	at    time.Duration
}

// queueOne starts a request of priority p that waits for the single slot
// of bl's backend, and returns once it is in the queue.
func queueOne(t *testing.T, bl *Balancer, name string, p kind.Priority, out chan<- granted, start time.Time) {
	t.Helper()
	before := bl.Snapshot()[0].Queued
	go func() {
		l, err := bl.Acquire(context.Background(), Request{Alias: "coder", Priority: p})
		out <- granted{name, l, err, time.Since(start)}
	}()
	deadline := time.Now().Add(2 * time.Second)
	for bl.Snapshot()[0].Queued == before {
		if time.Now().After(deadline) {
			t.Fatalf("%s never queued", name)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMainBeforeQueuedBackground: one slot, five background requests
// queued, then one main: the main one is served next, then the
// background ones in the order they came.
func TestMainBeforeQueuedBackground(t *testing.T) {
	bl := New(poolConfig(t, []float64{1}, ", max_parallel_requests: 1", "router_settings: {queue_timeout: 30}\n"), Options{})
	holder := acquire(t, bl, Request{Alias: "coder", Priority: kind.PriorityMain})
	got := make(chan granted, 6)
	start := time.Now()
	for i := range 5 {
		queueOne(t, bl, fmt.Sprintf("background-%d", i), kind.PriorityBackground, got, start)
	}
	queueOne(t, bl, "main", kind.PriorityMain, got, start)
	st := bl.Snapshot()[0]
	if st.Queued != 6 || st.QueuedByKind["background"] != 5 || st.QueuedByKind["main"] != 1 || st.QueuedByKind["subagent"] != 0 {
		t.Fatalf("snapshot queued %d by kind %v, want 6: 5 background, 1 main", st.Queued, st.QueuedByKind)
	}
	holder.Done(Succeeded, "")
	var order []string
	for range 6 {
		g := <-got
		if g.err != nil {
			t.Fatal(g.err)
		}
		order = append(order, g.name)
		g.lease.Done(Succeeded, "")
	}
	want := []string{"main", "background-0", "background-1", "background-2", "background-3", "background-4"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("served %v, want %v", order, want)
	}
}

// TestPriorityOrderAndFIFO: subagent before background before warmer,
// first come first served within one.
func TestPriorityOrderAndFIFO(t *testing.T) {
	bl := New(poolConfig(t, []float64{1}, ", max_parallel_requests: 1", "router_settings: {queue_timeout: 30}\n"), Options{})
	holder := acquire(t, bl, Request{Alias: "coder"})
	got := make(chan granted, 6)
	start := time.Now()
	for _, q := range []struct {
		name string
		p    kind.Priority
	}{{"warmer", kind.PriorityWarmer}, {"bg-a", kind.PriorityBackground}, {"sub-a", kind.PrioritySubagent}, {"bg-b", kind.PriorityBackground}, {"sub-b", kind.PrioritySubagent}, {"main", kind.PriorityMain}} {
		queueOne(t, bl, q.name, q.p, got, start)
	}
	holder.Done(Succeeded, "")
	var order []string
	for range 6 {
		g := <-got
		order = append(order, g.name)
		g.lease.Done(Succeeded, "")
	}
	if want := "[main sub-a sub-b bg-a bg-b warmer]"; fmt.Sprint(order) != want {
		t.Fatalf("served %v, want %s", order, want)
	}
}

// TestSteadyMainsDoNotStarveBackground: one slot and a main request
// always waiting beside one background request: mains pass it at first,
// and it is still served before queue_timeout.
func TestSteadyMainsDoNotStarveBackground(t *testing.T) {
	const timeout = 600 * time.Millisecond
	bl := New(poolConfig(t, []float64{1}, ", max_parallel_requests: 1", "router_settings: {queue_timeout: 0.6}\n"), Options{})
	holder := acquire(t, bl, Request{Alias: "coder"})
	got := make(chan granted, 64)
	start := time.Now()
	queueOne(t, bl, "background", kind.PriorityBackground, got, start)
	mainsServed := 0
	for {
		queueOne(t, bl, "main", kind.PriorityMain, got, start)
		time.Sleep(20 * time.Millisecond) // the slot's request runs
		holder.Done(Succeeded, "")
		g := <-got
		if g.err != nil {
			t.Fatalf("%s: %v", g.name, g.err)
		}
		holder = g.lease
		if g.name == "background" {
			if g.at >= timeout {
				t.Fatalf("background served after %s, past queue_timeout %s", g.at, timeout)
			}
			if mainsServed < 3 {
				t.Fatalf("only %d main requests passed the background one: priority did not hold", mainsServed)
			}
			t.Logf("background served after %s, %d main requests before it", g.at, mainsServed)
			break
		}
		mainsServed++
		if time.Since(start) > 3*timeout {
			t.Fatal("the background request was never served")
		}
	}
	holder.Done(Succeeded, "")
	// The main request still queued gets the slot.
	g := <-got
	if g.err != nil {
		t.Fatal(g.err)
	}
	g.lease.Done(Succeeded, "")
}
