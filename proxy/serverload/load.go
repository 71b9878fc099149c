// Package serverload reads how busy a model server is from what the server
// itself exposes: the requests it runs, the requests waiting in its own
// queue and how full its KV cache is. The parsers are pure (text in, Load
// out); Poller asks each backend on an interval.
//
//	vLLM        GET /metrics  vllm:num_requests_running, vllm:num_requests_waiting, vllm:kv_cache_usage_perc
//	SGLang      GET /metrics  sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage
//	llama.cpp   GET /metrics  llamacpp:requests_processing, llamacpp:requests_deferred, llamacpp:kv_cache_usage_ratio
//	            GET /slots    is_processing of each slot (the slot count too), when /metrics is off
//
// The families are read with the Prometheus text parser of
// github.com/prometheus/common/expfmt. A series labelled model_name counts
// for the backend model only; several engines of one server (vLLM's engine
// label under data parallelism) add up, their KV cache usage is the fullest
// one's. A server that exposes none of these (Ollama, LM Studio, a hosted
// API, a llama-server without --metrics and --slots) has no Load: its
// balancer counts the requests it has in flight itself.
package serverload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sources: where a Load was read.
const (
	SourceVLLM         = "vllm metrics"
	SourceSGLang       = "sglang metrics"
	SourceLlamaMetrics = "llama.cpp metrics"
	SourceLlamaSlots   = "llama.cpp slots"
	// SourceProxy is the source of a backend whose server exposes no load:
	// the proxy's own count of the requests it has in flight there.
	SourceProxy = "proxy in-flight"
)

// Load is how busy a server is, as it says itself.
type Load struct {
	Running int // requests it is running
	Waiting int // requests waiting in its own queue
	// KVUsage is the fraction of its KV cache in use (0 to 1); -1 when
	// the server does not say.
	KVUsage float64
	// Slots is how many requests it runs at once, when it says (llama.cpp
	// /slots); 0 when it does not.
	Slots  int
	Source string
}

// ErrNoLoad: the text holds none of the families of a known server.
var ErrNoLoad = errors.New("serverload: no vLLM, SGLang or llama.cpp load metrics")

// family is one server's names for the three gauges.
type family struct {
	source, running, waiting, kv string
}

var families = []family{
	{SourceVLLM, "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"},
	{SourceSGLang, "sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage"},
	{SourceLlamaMetrics, "llamacpp:requests_processing", "llamacpp:requests_deferred", "llamacpp:kv_cache_usage_ratio"},
}

// vllmOldKV is vLLM's name for the KV cache usage before 0.10.
const vllmOldKV = "vllm:gpu_cache_usage_perc"

// ParseMetrics reads a server's Prometheus text (GET /metrics) for model,
// the backend model ("" for any): which server it is comes from the
// family names.
func ParseMetrics(text []byte, model string) (Load, error) {
	p := expfmt.NewTextParser(modelUTF8)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return Load{}, fmt.Errorf("serverload: not Prometheus text: %v", err)
	}
	for _, f := range families {
		run, ok := mfs[f.running]
		if !ok {
			continue
		}
		l := Load{KVUsage: -1, Source: f.source}
		l.Running = int(sum(run, model))
		if w, ok := mfs[f.waiting]; ok {
			l.Waiting = int(sum(w, model))
		}
		kv, ok := mfs[f.kv]
		if !ok && f.source == SourceVLLM {
			kv, ok = mfs[vllmOldKV]
		}
		if ok {
			l.KVUsage = most(kv, model)
		}
		return l, nil
	}
	return Load{}, ErrNoLoad
}

var modelUTF8 = model.UTF8Validation

// matches keeps the series of model: those labelled model_name (or
// model) with another value are another model's. When no series names
// model, all count (a server of one model that labels it otherwise).
func matches(mf *dto.MetricFamily, model string) []*dto.Metric {
	if model == "" {
		return mf.GetMetric()
	}
	var named, all []*dto.Metric
	for _, m := range mf.GetMetric() {
		all = append(all, m)
		for _, lp := range m.GetLabel() {
			if (lp.GetName() == "model_name" || lp.GetName() == "model") && sameModel(lp.GetValue(), model) {
				named = append(named, m)
			}
		}
	}
	if len(named) > 0 {
		return named
	}
	return all
}

// sameModel compares a served model name with the backend model; a path
// (vLLM serves /models/x as its name unless --served-model-name) matches
// its last element.
func sameModel(served, model string) bool {
	if served == model {
		return true
	}
	if i := strings.LastIndexByte(served, '/'); i >= 0 && served[i+1:] == model {
		return true
	}
	return false
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func sum(mf *dto.MetricFamily, model string) float64 {
	var s float64
	for _, m := range matches(mf, model) {
		if v := value(m); v > 0 {
			s += v
		}
	}
	return s
}

func most(mf *dto.MetricFamily, model string) float64 {
	best := -1.0
	for _, m := range matches(mf, model) {
		if v := value(m); v == v && v > best { // NaN is not a reading
			best = v
		}
	}
	return best
}

// ParseSlots reads llama-server's GET /slots: a slot that is_processing
// runs a request; the slots are the server's capacity. It says nothing of
// the requests waiting for a slot, nor of the KV cache.
func ParseSlots(body []byte) (Load, error) {
	var slots []struct {
		ID           *int `json:"id"`
		IsProcessing bool `json:"is_processing"`
	}
	if err := json.Unmarshal(body, &slots); err != nil {
		return Load{}, fmt.Errorf("serverload: GET /slots: not llama.cpp's slots: %v", err)
	}
	l := Load{KVUsage: -1, Slots: len(slots), Source: SourceLlamaSlots}
	for _, s := range slots {
		if s.ID == nil {
			return Load{}, errors.New("serverload: GET /slots: a slot without an id")
		}
		if s.IsProcessing {
			l.Running++
		}
	}
	return l, nil
}

// readAll reads at most limit bytes of r.
func readAll(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("serverload: answer over %d bytes", limit)
	}
	return b, err
}
