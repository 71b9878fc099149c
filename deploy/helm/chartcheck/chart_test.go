package chartcheck

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

const (
	proxyName  = releaseName
	warmerName = releaseName + "-warmer"
	testPod    = releaseName + "-test"
)

// TestLint is `helm lint --strict` (warnings fail too) with the default
// values and each example file.
func TestLint(t *testing.T) {
	for name, files := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = namespace
			lint.KubeVersion = kubeVersion
			res := lint.Run([]string{chartDir}, mergeValues(t, files, ""))
			for _, m := range res.Messages {
				t.Logf("lint: %s", m.Error())
			}
			if res.TotalChartsLinted != 1 || len(res.Errors) > 0 {
				t.Fatalf("helm lint --strict %v: %d chart(s) linted, errors: %v", files, res.TotalChartsLinted, res.Errors)
			}
		})
	}
}

// TestTemplate is `helm template` with the default values and each example
// file: every object decodes strictly (render fails the test otherwise), and
// the objects the chart always makes are there.
func TestTemplate(t *testing.T) {
	for name, files := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			r := mustRender(t, files, "")
			t.Logf("%d objects: %s", len(r.Objects), strings.Join(r.names(), " "))
			one[*corev1.ConfigMap](t, r, proxyName)
			one[*appsv1.Deployment](t, r, proxyName)
			one[*corev1.Service](t, r, proxyName)
			one[*corev1.Pod](t, r, testPod)
			for _, o := range r.Objects {
				if o.Kind == "Secret" {
					t.Errorf("%s renders a Secret: the chart must only refer to an existing one", o.Template)
				}
			}
		})
	}
}

// TestInvariants checks, for the default values and each example file, what
// a rollout without a failed request and a hardened pod need.
func TestInvariants(t *testing.T) {
	for name, files := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			r := mustRender(t, files, "")
			vals := finalValues(t, files, "")
			dep := one[*appsv1.Deployment](t, r, proxyName)
			checkProxyDeployment(t, dep, vals)
			checkPodSecurity(t, "Deployment/"+proxyName, &dep.Spec.Template.Spec)
			secretEnv := checkSecretEnv(t, "Deployment/"+proxyName, dep.Spec.Template.Spec.Containers[0], vals)
			checkConfigMaps(t, r, secretEnv)
			checkSelectors(t, r, dep)

			pod := one[*corev1.Pod](t, r, testPod)
			checkPodSecurity(t, "Pod/"+testPod, &pod.Spec)
			checkTestHook(t, pod, vals)

			warmers := slices.DeleteFunc(find[*appsv1.Deployment](r), func(d *appsv1.Deployment) bool { return d.Name != warmerName })
			if enabled, _ := dig(vals, "warmer", "enabled").(bool); enabled != (len(warmers) == 1) {
				t.Fatalf("warmer.enabled is %v but %d warmer Deployment(s) rendered", enabled, len(warmers))
			}
			for _, w := range warmers {
				checkPodSecurity(t, "Deployment/"+warmerName, &w.Spec.Template.Spec)
				checkSecretEnv(t, "Deployment/"+warmerName, w.Spec.Template.Spec.Containers[0], vals)
				checkWarmer(t, w, dep)
			}
		})
	}
}

func checkProxyDeployment(t *testing.T, dep *appsv1.Deployment, vals map[string]any) {
	t.Helper()
	s := dep.Spec.Strategy
	if s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil || s.RollingUpdate.MaxUnavailable == nil || s.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("proxy strategy %+v: want RollingUpdate with maxUnavailable 0", s)
	}
	if hpa, _ := dig(vals, "autoscaling", "enabled").(bool); hpa != (dep.Spec.Replicas == nil) {
		t.Errorf("autoscaling.enabled %v, but spec.replicas is %v: with an HPA the Deployment must not set replicas", hpa, dep.Spec.Replicas)
	}
	spec := dep.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("proxy pod has %d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if port := flagValue(c.Args, "port"); port == "" || strconv.Itoa(int(ports["http"])) != port {
		t.Errorf("--port=%q but the container port named http is %d", port, ports["http"])
	}
	for probe, want := range map[string]struct {
		p    *corev1.Probe
		path string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
		if want.p == nil || want.p.HTTPGet == nil || want.p.HTTPGet.Path != want.path || want.p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe %+v: want GET %s on port http", probe, want.p, want.path)
		}
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds <= 0 {
		t.Fatalf("proxy preStop %+v: want a sleep, so the endpoint leaves the Service before SIGTERM", c.Lifecycle)
	}
	grace, err := time.ParseDuration(flagValue(c.Args, "grace"))
	if err != nil {
		t.Fatalf("proxy args %q: no valid --grace: %v", c.Args, err)
	}
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	if spec.TerminationGracePeriodSeconds == nil {
		t.Fatal("proxy terminationGracePeriodSeconds not set")
	}
	if total := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; total <= preStop+grace {
		t.Errorf("terminationGracePeriodSeconds %s <= preStop sleep %s + --grace %s: streams would be killed while draining", total, preStop, grace)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("proxy resources %+v: want cpu and memory requests and a memory limit", c.Resources)
	}
	if dep.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("proxy pod template has no checksum/config annotation")
	}
	if custom := dig(vals, "proxy", "affinity"); custom == nil || len(custom.(map[string]any)) == 0 {
		if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil || len(spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
			t.Error("proxy pods have no preferred pod anti-affinity")
		} else if term := spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm; !subset(term.LabelSelector.MatchLabels, dep.Spec.Template.Labels) {
			t.Errorf("anti-affinity selector %v does not select the proxy pods %v", term.LabelSelector.MatchLabels, dep.Spec.Template.Labels)
		}
	}
	checkConfigMount(t, "Deployment/"+proxyName, spec, c, flagValue(c.Args, "config"))
}

// checkConfigMount: the config file the binary reads is in the ConfigMap's
// read-only volume.
func checkConfigMount(t *testing.T, what string, spec corev1.PodSpec, c corev1.Container, path string) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if !strings.HasPrefix(path, m.MountPath+"/") {
			continue
		}
		if !m.ReadOnly {
			t.Errorf("%s: config mount %s is not read-only", what, m.MountPath)
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == proxyName && strings.TrimPrefix(path, m.MountPath+"/") == "config.yaml" {
				return
			}
		}
	}
	t.Errorf("%s: config path %q is not config.yaml of ConfigMap %s", what, path, proxyName)
}

func checkPodSecurity(t *testing.T, what string, spec *corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", what, psc)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: want seccompProfile RuntimeDefault", what)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: the service account token is mounted; nothing here talks to the API server", what)
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Errorf("%s: uses a host namespace", what)
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("%s/%s: no container securityContext", what, c.Name)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Errorf("%s/%s: root filesystem is writable", what, c.Name)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("%s/%s: privilege escalation allowed", what, c.Name)
		case sc.Privileged != nil && *sc.Privileged:
			t.Errorf("%s/%s: privileged", what, c.Name)
		case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0:
			t.Errorf("%s/%s: capabilities %+v: want drop ALL, add none", what, c.Name, sc.Capabilities)
		case sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot, sc.RunAsUser != nil && *sc.RunAsUser == 0:
			t.Errorf("%s/%s: runs as root", what, c.Name)
		}
	}
}

// checkSecretEnv: the keys reach the container from the Secret named in
// secret.name, as secret.env maps them: each variable the config refers to
// (os.environ/NAME), and PROXY_API_KEY when mapped; nothing else, so the
// Secret need not hold keys nobody reads. It returns those variables.
func checkSecretEnv(t *testing.T, what string, c corev1.Container, vals map[string]any) map[string]bool {
	t.Helper()
	secretName, _ := dig(vals, "secret", "name").(string)
	mapped := map[string]string{}
	if env, ok := dig(vals, "secret", "env").(map[string]any); ok {
		for k, v := range env {
			mapped[k], _ = v.(string)
		}
	}
	want := map[string]bool{}
	walk(map[string]any{"modelList": vals["modelList"], "generalSettings": vals["generalSettings"]}, "", func(path string, v any) {
		if s, ok := v.(string); ok && strings.HasSuffix(path, "key") {
			if m := envRef.FindStringSubmatch(s); m != nil {
				want[m[1]] = true
			}
		}
	})
	if url, ok := dig(vals, "database", "url").(string); ok {
		if m := envRef.FindStringSubmatch(url); m != nil {
			want[m[1]] = true
		}
	}
	if mapped["PROXY_API_KEY"] != "" {
		want["PROXY_API_KEY"] = true
	}
	got := map[string]bool{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if ref.Name != secretName || mapped[e.Name] != ref.Key || ref.Optional != nil && *ref.Optional {
				t.Errorf("%s: env %s from Secret %s key %s; secret.env says Secret %s key %q", what, e.Name, ref.Name, ref.Key, secretName, mapped[e.Name])
			}
			got[e.Name] = true
		case want[e.Name]:
			t.Errorf("%s: env %s is a Secret variable but is set from %+v", what, e.Name, e)
		}
	}
	if len(c.EnvFrom) > 0 {
		t.Errorf("%s: envFrom %+v: the chart maps each key explicitly", what, c.EnvFrom)
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s: Secret variables %v, want %v", what, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	return got
}

var envRef = regexp.MustCompile(`^os\.environ/([A-Za-z_][A-Za-z0-9_]*)$`)

// checkConfigMaps: no secret value in any ConfigMap. Every ConfigMap value
// is the proxy's config.yaml, and every key in it (api_key, master_key) is
// an os.environ/NAME reference to a variable the pods get from the Secret.
func checkConfigMaps(t *testing.T, r *rendering, secretEnv map[string]bool) {
	t.Helper()
	for _, cm := range find[*corev1.ConfigMap](r) {
		if len(cm.BinaryData) > 0 {
			t.Errorf("ConfigMap %s has binaryData", cm.Name)
		}
		for file, text := range cm.Data {
			if file != "config.yaml" {
				t.Errorf("ConfigMap %s holds %s: only config.yaml is expected", cm.Name, file)
				continue
			}
			var cfg map[string]any
			if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
				t.Fatalf("ConfigMap %s config.yaml: %v\n%s", cm.Name, err, text)
			}
			keys := 0
			walk(cfg, "", func(path string, v any) {
				field := path[strings.LastIndexByte(path, '.')+1:]
				if !strings.Contains(field, "key") {
					return
				}
				keys++
				s, _ := v.(string)
				m := envRef.FindStringSubmatch(s)
				switch {
				case m == nil:
					t.Errorf("ConfigMap %s: %s is %q, not an os.environ/NAME reference", cm.Name, path, s)
				case !secretEnv[m[1]]:
					t.Errorf("ConfigMap %s: %s reads %s, which the pods do not get from the Secret", cm.Name, path, m[1])
				}
			})
			if keys == 0 {
				t.Errorf("ConfigMap %s: no api_key found in config.yaml:\n%s", cm.Name, text)
			}
		}
	}
}

// checkSelectors: Service, PDB, HPA, ServiceMonitor, NetworkPolicy and
// Ingress all reach the proxy pods.
func checkSelectors(t *testing.T, r *rendering, dep *appsv1.Deployment) {
	t.Helper()
	pods := dep.Spec.Template.Labels
	if !subset(dep.Spec.Selector.MatchLabels, pods) {
		t.Errorf("Deployment selector %v does not select its pods %v", dep.Spec.Selector.MatchLabels, pods)
	}
	svc := one[*corev1.Service](t, r, proxyName)
	if !subset(svc.Spec.Selector, pods) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service selector %v does not select the proxy pods %v", svc.Spec.Selector, pods)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports %+v: want one, to the port named http", svc.Spec.Ports)
	}
	for _, pdb := range find[*policyv1.PodDisruptionBudget](r) {
		if !subset(pdb.Spec.Selector.MatchLabels, pods) {
			t.Errorf("PDB selector %v does not select the proxy pods", pdb.Spec.Selector.MatchLabels)
		}
		if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
			t.Error("PDB sets neither maxUnavailable nor minAvailable")
		}
	}
	for _, hpa := range find[*autoscalingv2.HorizontalPodAutoscaler](r) {
		if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != dep.Name || ref.APIVersion != "apps/v1" {
			t.Errorf("HPA targets %+v, want the proxy Deployment", ref)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas > hpa.Spec.MaxReplicas {
			t.Errorf("HPA replicas %v..%d", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
		}
	}
	for _, sm := range find[*monitoringv1.ServiceMonitor](r) {
		if !subset(sm.Spec.Selector.MatchLabels, svc.Labels) {
			t.Errorf("ServiceMonitor selector %v does not select the Service labels %v", sm.Spec.Selector.MatchLabels, svc.Labels)
		}
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name || sm.Spec.Endpoints[0].Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoints %+v: want GET /metrics on Service port %s", sm.Spec.Endpoints, svc.Spec.Ports[0].Name)
		}
	}
	proxyPolicies := 0
	for _, np := range find[*networkingv1.NetworkPolicy](r) {
		if np.Name != proxyName {
			continue
		}
		proxyPolicies++
		if !subset(np.Spec.PodSelector.MatchLabels, pods) || len(np.Spec.PodSelector.MatchLabels) == 0 {
			t.Errorf("NetworkPolicy %s selects %v, not the proxy pods", np.Name, np.Spec.PodSelector.MatchLabels)
		}
		if len(np.Spec.Ingress) == 0 || len(np.Spec.Ingress[0].Ports) == 0 || np.Spec.Ingress[0].Ports[0].Port.String() != "http" {
			t.Errorf("NetworkPolicy %s does not let clients reach the http port: %+v", np.Name, np.Spec.Ingress)
		}
	}
	if len(find[*networkingv1.NetworkPolicy](r)) > 0 && proxyPolicies != 1 {
		t.Errorf("%d NetworkPolicies for the proxy pods, want 1", proxyPolicies)
	}
	for _, ing := range find[*networkingv1.Ingress](r) {
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				if b := p.Backend.Service; b == nil || b.Name != svc.Name || b.Port.Number != svc.Spec.Ports[0].Port {
					t.Errorf("Ingress path %s goes to %+v, not Service %s:%d", p.Path, p.Backend.Service, svc.Name, svc.Spec.Ports[0].Port)
				}
			}
		}
	}
}

func checkWarmer(t *testing.T, w, proxy *appsv1.Deployment) {
	t.Helper()
	if w.Spec.Replicas == nil || *w.Spec.Replicas != 1 {
		t.Errorf("warmer replicas %v, want 1", w.Spec.Replicas)
	}
	if got, want := w.Spec.Template.Annotations["checksum/config"], proxy.Spec.Template.Annotations["checksum/config"]; got != want {
		t.Errorf("warmer config checksum %q differs from the proxy's %q", got, want)
	}
	c := w.Spec.Template.Spec.Containers[0]
	cfg := ""
	for _, e := range c.Env {
		if e.Name == "WARMER_CONFIG" {
			cfg = e.Value
		}
	}
	checkConfigMount(t, "Deployment/"+warmerName, w.Spec.Template.Spec, c, cfg)
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("warmer liveness probe %+v: want GET /healthz", c.LivenessProbe)
	}
}

// checkTestHook: `helm test` runs a pod that checks /readyz and that
// /v1/models lists every alias (run for real in TestRenderedChartRuns).
func checkTestHook(t *testing.T, pod *corev1.Pod, vals map[string]any) {
	t.Helper()
	if pod.Annotations["helm.sh/hook"] != "test" {
		t.Errorf("test pod annotations %v: want helm.sh/hook: test", pod.Annotations)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("test pod restartPolicy %q, want Never", pod.Spec.RestartPolicy)
	}
	script := strings.Join(pod.Spec.Containers[0].Command, " ")
	for _, want := range []string{"/readyz", "/v1/models"} {
		if !strings.Contains(script, want) {
			t.Errorf("test pod does not call %s:\n%s", want, script)
		}
	}
	for _, alias := range aliases(vals) {
		if !strings.Contains(script, "'"+alias+"'") {
			t.Errorf("test pod does not look for alias %q:\n%s", alias, script)
		}
	}
}

// TestChecksumFollowsConfig: the pods roll when config.yaml changes, and
// only then.
func TestChecksumFollowsConfig(t *testing.T) {
	checksum := func(override string) string {
		t.Helper()
		r := mustRender(t, nil, override)
		return one[*appsv1.Deployment](t, r, proxyName).Spec.Template.Annotations["checksum/config"]
	}
	base := checksum("")
	if len(base) != 64 {
		t.Fatalf("checksum/config %q is not a sha256", base)
	}
	for _, tc := range []struct{ name, override string }{
		{"a timeout", "modelList:\n  - model_name: claude-opus-5-5\n    proxy_params:\n      model: vendorb/Qwen/Qwen3-Coder-30B-A3B-Instruct\n      api_base: http://vllm:8000/v1\n      api_key: os.environ/BACKEND_API_KEY\n      timeout: 301\n"},
		{"routerSettings", "routerSettings:\n  cooldown_time: 45\n"},
		{"generalSettings", "generalSettings:\n  enable_vendora_pass_through: false\n"},
	} {
		if got := checksum(tc.override); got == base {
			t.Errorf("changing %s left checksum/config at %s: the pods would keep the old config", tc.name, got)
		}
	}
	for _, tc := range []struct{ name, override string }{
		{"replicas", "proxy:\n  replicas: 5\n"},
		{"resources", "proxy:\n  resources:\n    requests:\n      cpu: 200m\n"},
		{"warmer interval", "warmer:\n  interval: 30s\n"},
	} {
		if got := checksum(tc.override); got != base {
			t.Errorf("changing %s (not config.yaml) changed checksum/config from %s to %s", tc.name, base, got)
		}
	}
}

// TestRefusals: values that would leak a key or break a rollout stop
// `helm template` (and so `helm install`) with a message saying what to do.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ name, override, want string }{
		{"a literal api_key", "modelList:\n  - model_name: a\n    proxy_params:\n      model: vendorb/m\n      api_base: http://vllm:8000/v1\n      api_key: sk-live-0123456789\n", "api_key"},
		{"a literal master_key", "generalSettings:\n  master_key: sk-master-0123456789\n", "master_key"},
		{"a key variable the Secret does not provide", "modelList:\n  - model_name: a\n    proxy_params:\n      model: vendorb/m\n      api_base: http://vllm:8000/v1\n      api_key: os.environ/OTHER_KEY\n", "secret.env does not provide"},
		{"a grace period the drain does not fit in", "proxy:\n  graceSeconds: 30\n  preStopSleepSeconds: 10\n  terminationGracePeriodSeconds: 40\n", "must exceed"},
		{"no client key", "secret:\n  env:\n    PROXY_API_KEY: null\n", "no client key"},
		{"an unknown value (typo)", "replicaCount: 3\n", "replicaCount"},
		{"a database URL the Secret does not provide", "database:\n  url: os.environ/DATABASE_URL\n", "database.url reads os.environ/DATABASE_URL, which secret.env does not provide"},
		{"a literal database URL", "database:\n  url: postgres://dragoman:hunter2@postgres/dragoman\n", "database"},
		{"an empty modelList", "modelList: []\n", "modelList"},
		{"a backend URL without a scheme", "modelList:\n  - model_name: a\n    proxy_params:\n      model: vendorb/m\n      api_base: vllm:8000/v1\n      api_key: os.environ/BACKEND_API_KEY\n", "api_base"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, nil, tc.override)
			if err == nil {
				t.Fatalf("rendered with\n%s", tc.override)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// flagValue reads --name=value or --name value from args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func aliases(vals map[string]any) []string {
	var out []string
	list, _ := vals["modelList"].([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			name, _ := m["model_name"].(string)
			out = append(out, name)
		}
	}
	return out
}

// dig reads a nested value of merged Helm values.
func dig(vals map[string]any, path ...string) any {
	var v any = vals
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// walk calls fn for every scalar of a decoded YAML tree with its path.
func walk(v any, path string, fn func(path string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			walk(child, strings.TrimPrefix(path+"."+k, "."), fn)
		}
	case []any:
		for i, child := range x {
			walk(child, path+"["+strconv.Itoa(i)+"]", fn)
		}
	default:
		fn(path, v)
	}
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestDatabaseURLFromSecret: database.url puts general_settings.database_url
// in config.yaml as a reference to a variable both pods read from the
// Secret, never the URL (it holds a password); without it, no database.
func TestDatabaseURLFromSecret(t *testing.T) {
	const override = "database:\n  url: os.environ/DATABASE_URL\n  usageRetentionDays: 30\nsecret:\n  env:\n    DATABASE_URL: database-url\n"
	r := mustRender(t, nil, override)
	vals := finalValues(t, nil, override)
	var cfg struct {
		General map[string]any `json:"general_settings"`
	}
	if err := yaml.Unmarshal([]byte(one[*corev1.ConfigMap](t, r, proxyName).Data["config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.General["database_url"] != "os.environ/DATABASE_URL" || cfg.General["usage_retention_days"] != float64(30) {
		t.Fatalf("general_settings %v", cfg.General)
	}
	for _, name := range []string{proxyName, warmerName} {
		dep := one[*appsv1.Deployment](t, r, name)
		env := checkSecretEnv(t, "Deployment/"+name, dep.Spec.Template.Spec.Containers[0], vals)
		if !env["DATABASE_URL"] {
			t.Errorf("%s does not read DATABASE_URL from the Secret", name)
		}
	}
	cfg.General = nil
	if err := yaml.Unmarshal([]byte(one[*corev1.ConfigMap](t, mustRender(t, nil, ""), proxyName).Data["config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.General["database_url"]; ok {
		t.Fatalf("the defaults name a database: %v", cfg.General)
	}
}
