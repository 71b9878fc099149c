// Package healthcheck implements the --healthcheck flag of the binaries:
// images are FROM scratch, with no shell or curl, so each binary probes its
// own health endpoint.
package healthcheck

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Probe GETs url and succeeds on a 200 within two seconds.
func Probe(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
