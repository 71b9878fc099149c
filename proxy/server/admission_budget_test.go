package server

import (
	"context"
	"testing"
	"time"
)

// TestAdmissionBudget: bodies whose lengths fit the budget together go
// in at once; the one past it waits until a share is given back, or the
// hold ends; a body of unknown length counts as unknownLength, and one
// over the budget as the whole budget.
func TestAdmissionBudget(t *testing.T) {
	old := admissionHold
	admissionHold = time.Minute
	defer func() { admissionHold = old }()
	a := newAdmission(100)
	ctx := context.Background()
	first, second := a.enter(ctx, 40), a.enter(ctx, 60) // 100 of 100: both in
	if first == nil || second == nil {
		t.Fatal("two bodies that fit the budget together did not both go in")
	}
	third := make(chan *admitted)
	go func() { third <- a.enter(ctx, 30) }()
	select {
	case <-third:
		t.Fatal("a body past the budget went in while the others held it all")
	case <-time.After(50 * time.Millisecond):
	}
	first.leave()
	first.leave() // a second leave gives nothing back twice
	var got *admitted
	select {
	case got = <-third:
	case <-time.After(5 * time.Second):
		t.Fatal("the body past the budget did not go in once a share came back")
	}
	if a.sem.TryAcquire(11) { // 60 + 30 held: 10 left
		t.Fatal("a share given back twice: more than the budget is free")
	}
	second.leave()
	got.leave()
	if !a.sem.TryAcquire(100) {
		t.Fatal("the shares given back do not make the whole budget")
	}
	a.sem.Release(100)

	big := a.enter(ctx, 1<<20) // over the budget: all of it
	if big == nil || big.n != 100 {
		t.Fatalf("a body over the budget took %v, want the whole budget", big)
	}
	big.leave()
	if u := newAdmission(1<<30).enter(ctx, -1); u == nil || u.n != unknownLength {
		t.Fatalf("a body of unknown length took %v, want %d", u, unknownLength)
	}
}

// TestAdmissionHoldEnds: a share not given back goes back by itself when
// the hold ends, so that the next body goes in.
func TestAdmissionHoldEnds(t *testing.T) {
	old := admissionHold
	admissionHold = 20 * time.Millisecond
	defer func() { admissionHold = old }()
	a := newAdmission(10)
	ctx := context.Background()
	a.enter(ctx, 10) // never left
	start := time.Now()
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if a.enter(ctx2, 10) == nil {
		t.Fatal("the hold ended and the share did not come back")
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("waited %s for a hold of 20ms", d)
	}
}
