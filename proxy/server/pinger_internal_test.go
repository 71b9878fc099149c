package server

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestPingerCountsOnlyPingsWritten: a ping whose write failed (the client
// is gone) is not counted in dragoman_stream_pings_total; one written is.
func TestPingerCountsOnlyPingsWritten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		written bool
		want    int
	}{{"write fails", false, 0}, {"write succeeds", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{ResponseWriter: httptest.NewRecorder(), obs: observation{endpoint: "messages", stream: true}}
			var writes atomic.Int32
			fired := make(chan struct{})
			p := startPinger(rec, func([]byte) bool {
				if writes.Add(1) == 1 {
					defer close(fired)
				}
				return tc.written
			}, nil, func(dst []byte) []byte { return append(dst, "event: ping\n\n"...) }, time.Millisecond)
			<-fired
			p.stop()
			// stop returned: no ping is being written, and none will be.
			if n := int(writes.Load()); rec.obs.pings != tc.want*n {
				t.Errorf("%d ping writes (each written: %v) counted as %d pings, want %d", n, tc.written, rec.obs.pings, tc.want*n)
			}
		})
	}
}
