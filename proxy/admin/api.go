package admin

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/internal/authlimit"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

// keyJSON is a key as GET /admin/api/keys lists it.
type keyJSON struct {
	Name         string     `json:"name"`
	Models       []string   `json:"models"`
	RPM          int64      `json:"rpm"`
	TPM          int64      `json:"tpm"`
	BudgetTokens int64      `json:"budget_tokens"`
	BudgetPeriod string     `json:"budget_period"`
	ExpiresAt    *time.Time `json:"expires_at"`
	Revoked      bool       `json:"revoked"`
	Usage        keys.Usage `json:"usage"` // of the current budget period (the day's, UTC, without a budget)
}

// createJSON is the body of POST /admin/api/keys.
type createJSON struct {
	Name         string   `json:"name"`
	Models       []string `json:"models"`
	RPM          int64    `json:"rpm"`
	TPM          int64    `json:"tpm"`
	BudgetTokens int64    `json:"budget_tokens"`
	BudgetPeriod string   `json:"budget_period"` // 1h, 1d, 7d, 30d
	Expires      string   `json:"expires"`       // expires after: 12h, 30d; "": never
}

// apiError answers an error of the admin API: {"error":{"type","message"}}.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"type": typ, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v, json.FormatNilSliceAsNull(false))
	if err != nil {
		http.Error(w, "rendering: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}

// api serves /admin/api/keys with the master key as bearer.
func (a *Admin) api(w http.ResponseWriter, r *http.Request) {
	addr := authlimit.Addr(r)
	if wait, ok := a.limiter.Allow(addr); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		apiError(w, http.StatusTooManyRequests, "rate_limit_error", fmt.Sprintf("too many wrong keys from this address (%d within a minute): retry in %d seconds", authlimit.MaxFailures, int(wait/time.Second)))
		return
	}
	if !a.bearerIsMaster(r) {
		a.limiter.Failed(addr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="dragoman admin"`)
		apiError(w, http.StatusUnauthorized, "authentication_error", "the admin API needs the proxy's master key: send Authorization: Bearer <general_settings.master_key>")
		return
	}
	a.limiter.Succeeded(addr)
	name, _ := strings.CutPrefix(r.URL.Path, "/admin/api/keys")
	name = strings.TrimPrefix(name, "/")
	switch {
	case name == "" && r.Method == http.MethodGet:
		a.listKeys(w, r)
	case name == "" && r.Method == http.MethodPost:
		a.createKey(w, r)
	case name != "" && r.Method == http.MethodDelete:
		a.revokeKey(w, r, name)
	case name == "":
		w.Header().Set("Allow", "GET, POST")
		apiError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use GET /admin/api/keys (list) or POST /admin/api/keys (create)")
	default:
		w.Header().Set("Allow", "DELETE")
		apiError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use DELETE /admin/api/keys/NAME (revoke)")
	}
}

func (a *Admin) listKeys(w http.ResponseWriter, r *http.Request) {
	list, err := a.gate.Store().List(r.Context())
	if err != nil {
		apiError(w, http.StatusInternalServerError, "api_error", err.Error())
		return
	}
	now := a.gate.Now()
	out := make([]keyJSON, 0, len(list))
	for _, k := range list {
		u, err := a.gate.Store().KeyUsageSince(r.Context(), k.Name, k.PeriodStart(now))
		if err != nil {
			apiError(w, http.StatusInternalServerError, "api_error", err.Error())
			return
		}
		out = append(out, toJSON(k, u))
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": out})
}

func toJSON(k *keys.Key, u keys.Usage) keyJSON {
	j := keyJSON{Name: k.Name, Models: k.Models, RPM: k.RPM, TPM: k.TPM, BudgetTokens: k.BudgetTokens,
		BudgetPeriod: keys.FormatPeriod(k.BudgetPeriod), Revoked: k.Revoked(), Usage: u}
	if j.Models == nil {
		j.Models = []string{}
	}
	if !k.ExpiresAt.IsZero() {
		t := k.ExpiresAt
		j.ExpiresAt = &t
	}
	return j
}

// maxCreateBody bounds POST /admin/api/keys's body.
const maxCreateBody = 64 << 10

func (a *Admin) createKey(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCreateBody))
	if err != nil {
		apiError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "the body is over 64 KiB")
		return
	}
	var c createJSON
	if err := json.Unmarshal(body, &c, json.RejectUnknownMembers(true)); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "the body must be a JSON object with name and, optionally, models, rpm, tpm, budget_tokens, budget_period, expires: "+err.Error())
		return
	}
	sp := keys.Spec{Name: c.Name, Models: c.Models, RPM: c.RPM, TPM: c.TPM, BudgetTokens: c.BudgetTokens}
	if c.BudgetPeriod != "" {
		if sp.BudgetPeriod, err = keys.ParsePeriod(c.BudgetPeriod); err != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "budget_period: "+err.Error())
			return
		}
	}
	if c.Expires != "" {
		if sp.ExpiresIn, err = keys.ParsePeriod(c.Expires); err != nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "expires: "+err.Error())
			return
		}
	}
	k, text, err := a.gate.Create(r.Context(), sp)
	switch {
	case errors.Is(err, keys.ErrExists):
		apiError(w, http.StatusConflict, "invalid_request_error", err.Error())
		return
	case err != nil && k == nil:
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	case err != nil:
		a.log.Warn("admin: reading the keys again after a create", "err", err)
	}
	a.log.Info("admin: key created", "name", k.Name)
	j := toJSON(k, keys.Usage{})
	// The key's text is in this answer only: the store keeps its hash.
	writeJSON(w, http.StatusCreated, struct {
		keyJSON `json:",inline"`
		Key     string `json:"key"`
	}{j, text})
}

func (a *Admin) revokeKey(w http.ResponseWriter, r *http.Request, name string) {
	err := a.gate.Revoke(r.Context(), name)
	switch {
	case errors.Is(err, keys.ErrNotFound):
		apiError(w, http.StatusNotFound, "not_found_error", err.Error())
		return
	case err != nil:
		apiError(w, http.StatusInternalServerError, "api_error", err.Error())
		return
	}
	a.log.Info("admin: key revoked", "name", name)
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "revoked": true})
}
