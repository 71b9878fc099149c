package integration

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// loadCompose loads docker-compose.yml with the loader of docker compose
// itself (compose-go, as `docker compose --profile P config` does), with
// the given profiles and no variable set.
func loadCompose(t *testing.T, root string, profiles ...string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root), cli.WithEnv(nil), cli.WithProfiles(profiles), cli.WithResolvedPaths(true))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml with profiles %v does not load: %v", profiles, err)
	}
	return p
}

// mountOf returns the source of the service's bind mount at target.
func mountOf(t *testing.T, s types.ServiceConfig, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Target == target {
			if !v.ReadOnly && v.Type == types.VolumeTypeBind {
				t.Errorf("%s: %s is mounted read-write", s.Name, target)
			}
			return v.Source
		}
	}
	t.Errorf("%s mounts nothing at %s", s.Name, target)
	return ""
}

// TestComposeObservabilityProfile: the compose profile "observability"
// loads (as `docker compose --profile observability config` loads it) and
// adds only prometheus and grafana; Prometheus gets deploy/prometheus.yml at
// the path its --config.file names, and every scrape target there is a
// service of the stack at the port and path that service serves /metrics
// on (the proxy's --port, the warmer's WARMER_HEALTH_ADDR); Grafana gets
// the provisioning whose data source is that Prometheus and whose
// dashboard folder holds deploy/grafana/dragoman.json. No Docker needed:
// the images (upstream prom/prometheus and grafana/grafana) are not pulled.
func TestComposeObservabilityProfile(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	base := loadCompose(t, root)
	p := loadCompose(t, root, "observability")
	for _, name := range []string{"prometheus", "grafana"} {
		if _, ok := base.Services[name]; ok {
			t.Errorf("%s runs without the observability profile", name)
		}
		if s, ok := p.Services[name]; !ok {
			t.Fatalf("the observability profile has no service %s", name)
		} else if !slices.Contains(s.Profiles, "observability") {
			t.Errorf("%s profiles %v", name, s.Profiles)
		}
	}
	if len(p.Services) != len(base.Services)+2 {
		t.Errorf("the profile adds %d services, want prometheus and grafana", len(p.Services)-len(base.Services))
	}

	// Where each service of the stack serves /metrics.
	metricsPort := map[string]string{}
	proxy := p.Services["proxy"]
	if i := slices.Index(proxy.Command, "--port"); i >= 0 && i+1 < len(proxy.Command) {
		metricsPort["proxy"] = proxy.Command[i+1]
	}
	if slices.ContainsFunc(proxy.Command, func(a string) bool { return strings.HasPrefix(a, "--metrics-addr") }) {
		t.Fatalf("the proxy's command sets --metrics-addr: this test reads /metrics on its --port")
	}
	if addr := proxy.Environment["WARMER_HEALTH_ADDR"]; addr != nil {
		t.Errorf("WARMER_HEALTH_ADDR on the proxy: %s", *addr)
	}
	if addr := p.Services["warmer"].Environment["WARMER_HEALTH_ADDR"]; addr != nil {
		if host, port, err := net.SplitHostPort(*addr); err == nil && (host == "" || host == "0.0.0.0") {
			metricsPort["warmer"] = port
		} else {
			t.Errorf("the warmer's WARMER_HEALTH_ADDR %q is not reachable from the prometheus container (want :PORT)", *addr)
		}
	}
	if metricsPort["proxy"] == "" || metricsPort["warmer"] == "" {
		t.Fatalf("metrics ports of the stack: %v, want the proxy's --port and the warmer's WARMER_HEALTH_ADDR", metricsPort)
	}

	// Prometheus: its config is deploy/prometheus.yml, and it scrapes them.
	prom := p.Services["prometheus"]
	configPath := ""
	for _, a := range prom.Command {
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			configPath = v
		}
	}
	if configPath == "" {
		t.Fatalf("prometheus's command %v names no --config.file", prom.Command)
	}
	if src := mountOf(t, prom, configPath); src != filepath.Join(root, "deploy", "prometheus.yml") {
		t.Errorf("prometheus's %s is %s, want deploy/prometheus.yml", configPath, src)
	}
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var promCfg struct {
		ScrapeConfigs []struct {
			Job           string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			Scheme        string `yaml:"scheme"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &promCfg); err != nil {
		t.Fatalf("deploy/prometheus.yml: %v", err)
	}
	scraped := map[string]bool{}
	for _, sc := range promCfg.ScrapeConfigs {
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			t.Errorf("job %s scrapes %s, but the proxy and the warmer serve /metrics", sc.Job, sc.MetricsPath)
		}
		if sc.Scheme != "" && sc.Scheme != "http" {
			t.Errorf("job %s: scheme %s, the stack serves plain HTTP", sc.Job, sc.Scheme)
		}
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, err := net.SplitHostPort(target)
				if err != nil {
					t.Errorf("job %s: target %q: %v", sc.Job, target, err)
					continue
				}
				if want, ok := metricsPort[host]; !ok {
					t.Errorf("job %s: target %s is not a service that serves metrics (%v)", sc.Job, target, metricsPort)
				} else if port != want {
					t.Errorf("job %s: target %s, but %s serves /metrics on port %s", sc.Job, target, host, want)
				}
				scraped[host] = true
			}
		}
	}
	for host := range metricsPort {
		if !scraped[host] {
			t.Errorf("deploy/prometheus.yml does not scrape %s", host)
		}
	}
	if !slices.ContainsFunc(prom.Ports, func(pc types.ServicePortConfig) bool { return pc.Target == 9090 && pc.HostIP == "127.0.0.1" }) {
		t.Errorf("prometheus's port 9090 is not published on 127.0.0.1: %+v", prom.Ports)
	}

	// Grafana: provisioning mounted; its data source is this Prometheus;
	// its dashboard folder holds deploy/grafana/dragoman.json.
	graf := p.Services["grafana"]
	if src := mountOf(t, graf, "/etc/grafana/provisioning"); src != filepath.Join(root, "deploy", "grafana", "provisioning") {
		t.Errorf("grafana's provisioning is %s", src)
	}
	var ds struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	raw, _ = os.ReadFile(filepath.Join(root, "deploy", "grafana", "provisioning", "datasources", "prometheus.yml"))
	if err := yaml.Unmarshal(raw, &ds); err != nil || len(ds.Datasources) != 1 {
		t.Fatalf("grafana data sources: %v %+v", err, ds)
	}
	if d := ds.Datasources[0]; d.Type != "prometheus" || d.URL != "http://prometheus:9090" {
		t.Errorf("grafana's data source %+v, want type prometheus at http://prometheus:9090 (the service)", d)
	}
	var dash struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	raw, _ = os.ReadFile(filepath.Join(root, "deploy", "grafana", "provisioning", "dashboards", "dragoman.yml"))
	if err := yaml.Unmarshal(raw, &dash); err != nil || len(dash.Providers) != 1 {
		t.Fatalf("grafana dashboard providers: %v %+v", err, dash)
	}
	dashboard := filepath.Join(dash.Providers[0].Options.Path, "dragoman.json")
	if src := mountOf(t, graf, dashboard); src != filepath.Join(root, "deploy", "grafana", "dragoman.json") {
		t.Errorf("grafana's %s is %s, want deploy/grafana/dragoman.json", dashboard, src)
	}
	// Every panel of the dashboard queries that data source (by uid).
	raw, err = os.ReadFile(filepath.Join(root, "deploy", "grafana", "dragoman.json"))
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]int{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if d, ok := v["datasource"].(map[string]any); ok {
				if uid, ok := d["uid"].(string); ok {
					uids[uid]++
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("deploy/grafana/dragoman.json: %v", err)
	}
	walk(doc)
	if len(uids) == 0 {
		t.Error("the dashboard names no data source")
	}
	for uid := range uids {
		if uid != ds.Datasources[0].UID && !strings.HasPrefix(uid, "${") {
			t.Errorf("the dashboard queries data source %q, the provisioned one is %q", uid, ds.Datasources[0].UID)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("profile observability: %d services; prometheus scrapes %v at /metrics; grafana: data source %s, dashboard %s (data source uids %v)",
		len(p.Services), metricsPort, ds.Datasources[0].URL, dashboard, uids)
}
