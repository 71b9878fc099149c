// Package discover learns what a backend is from what it already exposes:
// which server it is, the models it serves, a model's context window and
// whether it reads images. One pure parser per server shape (each tested
// against recorded answers in testdata/), and Probe, which asks a backend
// in turn until one shape answers:
//
//	vLLM, SGLang  GET /v1/models             data[].max_model_len
//	llama.cpp     GET /props                 default_generation_settings.n_ctx, modalities.vision
//	Ollama        GET /api/ps                models[].context_length (a loaded model's window)
//	              POST /api/show             parameters num_ctx, capabilities (model_info.<arch>.context_length
//	                                         is the model's most, not the window Ollama runs it with)
//	LM Studio     GET /api/v1/models         loaded_instances[].config.context_length, max_context_length, capabilities.vision
//	              GET /api/v0/models         loaded_context_length, max_context_length, type vlm
//
// What no shape says stays unknown: nothing is guessed.
package discover

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Server names.
const (
	VLLM     = "vLLM"
	SGLang   = "SGLang"
	LlamaCpp = "llama.cpp"
	Ollama   = "Ollama"
	LMStudio = "LM Studio"
)

// Ability is a yes, a no, or not known.
type Ability int8

// Abilities.
const (
	Unknown Ability = iota
	Yes
	No
)

func (a Ability) String() string {
	switch a {
	case Yes:
		return "yes"
	case No:
		return "no"
	}
	return "unknown"
}

func abilityOf(b bool) Ability {
	if b {
		return Yes
	}
	return No
}

// Window sources of an Ollama model.
const (
	SourceOllamaPS        = "GET /api/ps context_length"
	SourceOllamaPSKept    = "GET /api/ps context_length, kept since the model was unloaded"
	SourceOllamaNotLoaded = "unknown: the model is not loaded and sets no num_ctx (GET /api/ps tells the window once it is)"
)

// Keep is what a new probe of a backend model found, with what it can no
// longer see kept from the one before: an Ollama model's window read from
// /api/ps while it was loaded stays its window after the keep-alive
// unloads it (Ollama loads it again with the same context), instead of
// falling back to unknown.
func Keep(before, now Info) Info {
	if now.Server != Ollama || before.Server != Ollama || before.ContextWindow == 0 {
		return now
	}
	if now.WindowSource == SourceOllamaNotLoaded && (before.WindowSource == SourceOllamaPS || before.WindowSource == SourceOllamaPSKept) {
		now.ContextWindow, now.WindowSource = before.ContextWindow, SourceOllamaPSKept
	}
	return now
}

// Info is what a backend told about itself and one of its models.
type Info struct {
	Server string   // one of the server names, "" when not recognized
	Models []string // the models GET /v1/models lists
	// ContextWindow is the model's context window in tokens, 0 when
	// unknown; WindowSource says where it was read.
	ContextWindow int
	WindowSource  string
	Vision        Ability
}

// ModelList is the Chat-format model list (GET /v1/models).
type ModelList struct {
	IDs []string
	// Server is the server that wrote its own name in owned_by (vLLM,
	// SGLang, llama.cpp, Ollama's "library", LM Studio's
	// "organization_owner"), "" otherwise.
	Server string
	// MaxModelLen is max_model_len of the asked model (vLLM, SGLang), 0
	// when absent.
	MaxModelLen int
}

// ParseModels reads a GET /v1/models answer. model is the backend model
// whose max_model_len is wanted.
func ParseModels(body []byte, model string) (ModelList, error) {
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return ModelList{}, fmt.Errorf("GET /v1/models: not a model list: %v", err)
	}
	var out ModelList
	for _, m := range list.Data {
		out.IDs = append(out.IDs, m.ID)
		if out.Server == "" {
			out.Server = ownerServer[m.OwnedBy]
		}
		if m.ID == model {
			out.MaxModelLen = m.MaxModelLen
		}
	}
	return out, nil
}

// ownerServer maps what each server writes in owned_by to its name.
var ownerServer = map[string]string{
	"vllm":               VLLM,
	"sglang":             SGLang,
	"llamacpp":           LlamaCpp,
	"library":            Ollama,
	"organization_owner": LMStudio,
}

// ParseLlamaProps reads llama.cpp's GET /props: the context of a slot (what
// one request gets) and whether a vision projector is loaded.
func ParseLlamaProps(body []byte) (window int, vision Ability, err error) {
	var p struct {
		Settings *struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		Modalities *struct {
			Vision bool `json:"vision"`
		} `json:"modalities"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Settings == nil {
		return 0, Unknown, errors.New("GET /props: not llama.cpp's properties (no default_generation_settings)")
	}
	if p.Modalities != nil {
		vision = abilityOf(p.Modalities.Vision)
	}
	return p.Settings.NCtx, vision, nil
}

// ParseOllamaPS reads Ollama's GET /api/ps: the window a loaded model runs
// with. found is false when model is not loaded.
func ParseOllamaPS(body []byte, model string) (window int, found bool, err error) {
	var ps struct {
		Models []struct {
			Name          string `json:"name"`
			Model         string `json:"model"`
			ContextLength int    `json:"context_length"`
		} `json:"models"`
	}
	if err := json.Unmarshal(body, &ps); err != nil {
		return 0, false, fmt.Errorf("GET /api/ps: not Ollama's running models: %v", err)
	}
	for _, m := range ps.Models {
		if sameOllamaModel(m.Name, model) || sameOllamaModel(m.Model, model) {
			return m.ContextLength, m.ContextLength > 0, nil
		}
	}
	return 0, false, nil
}

// sameOllamaModel compares model names, "name" meaning "name:latest".
func sameOllamaModel(a, b string) bool {
	norm := func(s string) string {
		if !strings.Contains(s, ":") {
			return s + ":latest"
		}
		return s
	}
	return a != "" && norm(a) == norm(b)
}

// OllamaShow is what Ollama's POST /api/show says of a model.
type OllamaShow struct {
	NumCtx  int // num_ctx the model sets (its Modelfile), 0 when it sets none
	Trained int // <arch>.context_length: the most the model can hold
	Vision  Ability
	Tools   Ability
}

// ParseOllamaShow reads Ollama's POST /api/show answer.
func ParseOllamaShow(body []byte) (OllamaShow, error) {
	var s struct {
		Parameters   string                    `json:"parameters"`
		ModelInfo    map[string]jsontext.Value `json:"model_info"`
		Capabilities *[]string                 `json:"capabilities"`
	}
	if err := json.Unmarshal(body, &s); err != nil || s.ModelInfo == nil {
		return OllamaShow{}, errors.New("POST /api/show: not Ollama's model description (no model_info)")
	}
	var out OllamaShow
	sc := bufio.NewScanner(strings.NewReader(s.Parameters))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "num_ctx" {
			out.NumCtx, _ = strconv.Atoi(f[1])
		}
	}
	var arch string
	_ = json.Unmarshal(s.ModelInfo["general.architecture"], &arch)
	if v, ok := s.ModelInfo[arch+".context_length"]; ok {
		_ = json.Unmarshal(v, &out.Trained)
	}
	if s.Capabilities != nil {
		has := func(c string) Ability {
			for _, x := range *s.Capabilities {
				if x == c {
					return Yes
				}
			}
			return No
		}
		out.Vision, out.Tools = has("vision"), has("tools")
	}
	return out, nil
}

// LMStudioModel is what LM Studio's REST API says of a model.
type LMStudioModel struct {
	Loaded int // context length the model is loaded with, 0 when not loaded
	Max    int // max_context_length: the most the model can hold
	Vision Ability
}

// ParseLMStudioV1 reads LM Studio's GET /api/v1/models (0.4 and later).
func ParseLMStudioV1(body []byte, model string) (LMStudioModel, bool, error) {
	var l struct {
		Models *[]struct {
			Key             string `json:"key"`
			MaxContext      int    `json:"max_context_length"`
			LoadedInstances []struct {
				ID     string `json:"id"`
				Config struct {
					ContextLength int `json:"context_length"`
				} `json:"config"`
			} `json:"loaded_instances"`
			Capabilities *struct {
				Vision bool `json:"vision"`
			} `json:"capabilities"`
		} `json:"models"`
	}
	if err := json.Unmarshal(body, &l); err != nil || l.Models == nil {
		return LMStudioModel{}, false, errors.New("GET /api/v1/models: not LM Studio's model list")
	}
	for _, m := range *l.Models {
		out := LMStudioModel{Max: m.MaxContext}
		match := m.Key == model
		for _, inst := range m.LoadedInstances {
			if match || inst.ID == model {
				match = true
				if out.Loaded == 0 {
					out.Loaded = inst.Config.ContextLength
				}
			}
		}
		if !match {
			continue
		}
		if m.Capabilities != nil {
			out.Vision = abilityOf(m.Capabilities.Vision)
		}
		return out, true, nil
	}
	return LMStudioModel{}, false, nil
}

// ParseLMStudioV0 reads LM Studio's GET /api/v0/models (0.3.6 and later).
func ParseLMStudioV0(body []byte, model string) (LMStudioModel, bool, error) {
	var l struct {
		Data *[]struct {
			ID         string `json:"id"`
			Type       string `json:"type"`
			State      string `json:"state"`
			MaxContext int    `json:"max_context_length"`
			Loaded     int    `json:"loaded_context_length"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &l); err != nil || l.Data == nil {
		return LMStudioModel{}, false, errors.New("GET /api/v0/models: not LM Studio's model list")
	}
	for _, m := range *l.Data {
		if m.ID != model {
			continue
		}
		out := LMStudioModel{Max: m.MaxContext, Vision: abilityOf(m.Type == "vlm")}
		if m.State == "loaded" {
			out.Loaded = m.Loaded
		}
		return out, true, nil
	}
	return LMStudioModel{}, false, nil
}
