// Package compaction seals and opens the summaries of remote compaction:
// the encrypted_content of the "compaction" item the proxy answers a
// Responses request ending in a compaction_trigger with (Codex's remote
// compaction), which the client keeps and sends back in later requests.
//
// A summary is sealed with XChaCha20-Poly1305 (golang.org/x/crypto), under
// a key derived with HKDF-SHA256 from a secret of the configuration, so
// that any replica with the same configuration opens what another sealed,
// and an item the proxy did not write (or whose bytes were changed) is
// refused. Several secrets rotate: the first seals, every one opens.
package compaction

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// Prefix starts every sealed summary: the format's name and version.
const Prefix = "dgm1."

// info binds derived keys to this use: a secret shared with another use
// (the master key) yields a different key here.
const info = "dragoman remote compaction v1"

// ErrForeign is the error of Open for content the proxy did not seal with
// any of its keys, or whose bytes changed since.
var ErrForeign = errors.New("not sealed by this proxy (or sealed with a key it no longer has, or altered)")

// Sealer seals with its first key and opens with any of them.
type Sealer struct {
	aeads []cipher.AEAD
}

// New returns a Sealer for secrets (at least one, none empty), first the
// one that seals.
func New(secrets ...string) (*Sealer, error) {
	if len(secrets) == 0 {
		return nil, errors.New("compaction: no key")
	}
	s := &Sealer{}
	for _, sec := range secrets {
		if sec == "" {
			return nil, errors.New("compaction: an empty key")
		}
		key, err := hkdf.Key(sha256.New, []byte(sec), nil, info, chacha20poly1305.KeySize)
		if err != nil {
			return nil, err
		}
		a, err := chacha20poly1305.NewX(key)
		if err != nil {
			return nil, err
		}
		s.aeads = append(s.aeads, a)
	}
	return s, nil
}

// Random returns a Sealer with a key of its own, that no other process
// shares: what is sealed opens only until the process ends.
func Random() *Sealer {
	k := make([]byte, 32)
	rand.Read(k)
	s, _ := New(base64.RawStdEncoding.EncodeToString(k))
	return s
}

// Seal returns summary sealed: Prefix, then the nonce and the ciphertext
// in unpadded base64url.
func (s *Sealer) Seal(summary string) string {
	a := s.aeads[0]
	buf := make([]byte, a.NonceSize(), a.NonceSize()+len(summary)+a.Overhead())
	rand.Read(buf)
	buf = a.Seal(buf, buf, []byte(summary), []byte(Prefix))
	return Prefix + base64.RawURLEncoding.EncodeToString(buf)
}

// Open returns the summary that sealed holds, or ErrForeign.
func (s *Sealer) Open(sealed string) (string, error) {
	enc, ok := strings.CutPrefix(sealed, Prefix)
	if !ok {
		return "", ErrForeign
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return "", ErrForeign
	}
	for _, a := range s.aeads {
		if len(b) < a.NonceSize()+a.Overhead() {
			return "", ErrForeign
		}
		nonce, ct := b[:a.NonceSize()], b[a.NonceSize():]
		if plain, err := a.Open(nil, nonce, ct, []byte(Prefix)); err == nil {
			return string(plain), nil
		}
	}
	return "", ErrForeign
}
