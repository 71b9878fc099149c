package memo

import "testing"

func TestGet(t *testing.T) {
	m := New()
	calls := 0
	count := func() int { calls++; return 7 }
	for range 3 {
		if v := Get(m, 'a', []byte("some bytes"), count); v != 7 {
			t.Fatalf("got %d", v)
		}
	}
	if calls != 1 {
		t.Errorf("a fact asked for three times was computed %d times", calls)
	}
	if v := Get(m, 'b', []byte("some bytes"), func() int { return 9 }); v != 9 {
		t.Errorf("another kind of the same bytes gave %d: the first kind's fact", v)
	}
	if v := Get(m, 'a', []byte("other bytes"), func() int { return 11 }); v != 11 {
		t.Errorf("other bytes gave %d", v)
	}
	if v := Get(m, 'a', []byte("some bytes"), func() string { return "x" }); v != "x" {
		t.Errorf("a fact of another type gave %q", v)
	}
	var none *Memo
	if v := Get(none, 'a', []byte("some bytes"), func() int { return 3 }); v != 3 {
		t.Errorf("a nil memo gave %d, not what compute gives", v)
	}
}

// TestBounded: a memo holds at most Size facts; past that it starts over,
// and what it gives stays right.
func TestBounded(t *testing.T) {
	m := New()
	for i := range 3 * Size {
		b := []byte{byte(i), byte(i >> 8)}
		if v := Get(m, 'a', b, func() int { return i }); v != i {
			t.Fatalf("fact %d: got %d", i, v)
		}
		if n := m.Len(); n > Size {
			t.Fatalf("after %d facts the memo holds %d, more than %d", i+1, n, Size)
		}
	}
}

func TestConcurrent(t *testing.T) {
	m := New()
	done := make(chan bool)
	for g := range 4 {
		go func() {
			for i := range 2000 {
				b := []byte{byte(i % 50)}
				if v := Get(m, 'a', b, func() int { return i % 50 }); v != i%50 {
					t.Errorf("goroutine %d: fact %d gave %d", g, i%50, v)
				}
			}
			done <- true
		}()
	}
	for range 4 {
		<-done
	}
}

// TestFindPutSum: Find gives what Put remembered for the same kind and
// bytes only; Sum is the same for the same kind and bytes, and differs
// between two memos (their seeds); a nil memo remembers nothing.
func TestFindPutSum(t *testing.T) {
	m, other := New(), New()
	if _, ok := Find[int](m, 'a', []byte("x")); ok {
		t.Fatal("an empty memo found a fact")
	}
	Put(m, 'a', []byte("x"), 7)
	if v, ok := Find[int](m, 'a', []byte("x")); !ok || v != 7 {
		t.Errorf("Find = %d, %v after Put 7", v, ok)
	}
	if _, ok := Find[int](m, 'b', []byte("x")); ok {
		t.Error("a fact of another kind was found")
	}
	if _, ok := Find[string](m, 'a', []byte("x")); ok {
		t.Error("a fact of another type was found")
	}
	x1, x2 := m.Sum('a', []byte("x")), m.Sum('a', []byte{'x'})
	if x1 != x2 || x1 == m.Sum('a', []byte("y")) {
		t.Error("Sum does not tell bytes apart")
	}
	if m.Sum('a', []byte("x")) == other.Sum('a', []byte("x")) {
		t.Error("two memos share a seed")
	}
	var none *Memo
	Put(none, 'a', []byte("x"), 1)
	if _, ok := Find[int](none, 'a', []byte("x")); ok || none.Sum('a', []byte("x")) != 0 {
		t.Error("a nil memo remembered")
	}
}
