package compaction

import (
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	s, err := New("a-compaction-secret")
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.Seal("the summary: fix the parser")
	if !strings.HasPrefix(sealed, Prefix) || strings.Contains(sealed, "summary") {
		t.Fatalf("sealed = %q", sealed)
	}
	if got, err := s.Open(sealed); err != nil || got != "the summary: fix the parser" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if a, b := s.Seal("x"), s.Seal("x"); a == b {
		t.Error("two seals of one text are equal: the nonce is not random")
	}
}

func TestReplicaOpensWhatAnotherSealed(t *testing.T) {
	a, _ := New("shared")
	b, _ := New("shared")
	if got, err := b.Open(a.Seal("hello")); err != nil || got != "hello" {
		t.Fatalf("replica Open = %q, %v", got, err)
	}
}

func TestForeignAndTampered(t *testing.T) {
	a, _ := New("one")
	other, _ := New("two")
	sealed := a.Seal("hello")
	if _, err := other.Open(sealed); !errors.Is(err, ErrForeign) {
		t.Errorf("another key opened it: %v", err)
	}
	// Flip one character of the ciphertext.
	i := len(sealed) - 5
	c := byte('A')
	if sealed[i] == 'A' {
		c = 'B'
	}
	tampered := sealed[:i] + string(c) + sealed[i+1:]
	if _, err := a.Open(tampered); !errors.Is(err, ErrForeign) {
		t.Errorf("tampered content opened: %v", err)
	}
	for _, bad := range []string{"", "gAAAAABopenai-opaque", Prefix, Prefix + "!!", Prefix + "AAAA"} {
		if _, err := a.Open(bad); !errors.Is(err, ErrForeign) {
			t.Errorf("Open(%q) = %v", bad, err)
		}
	}
}

func TestRotation(t *testing.T) {
	old, _ := New("old")
	sealedOld := old.Seal("before the rotation")
	rotated, _ := New("new", "old")
	if got, err := rotated.Open(sealedOld); err != nil || got != "before the rotation" {
		t.Fatalf("rotated Open of an old item = %q, %v", got, err)
	}
	// The new key seals: a proxy that has only the old key refuses it.
	if _, err := old.Open(rotated.Seal("after")); err == nil {
		t.Error("the old key opened what the new key sealed")
	}
	if _, err := New(); err == nil {
		t.Error("New() without a key: no error")
	}
	if _, err := New("a", ""); err == nil {
		t.Error("New with an empty key: no error")
	}
}
