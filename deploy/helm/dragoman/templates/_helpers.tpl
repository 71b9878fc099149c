{{/* Names: the release's full name, capped at 63 characters. */}}
{{- define "dragoman.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "dragoman.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "dragoman.warmerName" -}}
{{- printf "%s-warmer" (include "dragoman.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "dragoman.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "dragoman.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; selector labels take a component (proxy, warmer). */}}
{{- define "dragoman.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "dragoman.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: dragoman
{{- end -}}

{{- define "dragoman.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dragoman.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "dragoman.image" -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}

{{/*
The proxy's config.yaml, rendered from modelList, routerSettings and
generalSettings with the config file's own keys. Key references are checked
first: each must name a variable the Secret provides.
*/}}
{{- define "dragoman.config" -}}
{{- include "dragoman.checkKeyRefs" . -}}
model_list:
{{ toYaml .Values.modelList | indent 2 }}
{{- with .Values.routerSettings }}
router_settings:
{{ toYaml . | indent 2 }}
{{- end }}
{{- $general := deepCopy (.Values.generalSettings | default dict) -}}
{{- with .Values.database.url }}
{{- $_ := set $general "database_url" (toString .) -}}
{{- $_ := set $general "usage_retention_days" (int $.Values.database.usageRetentionDays) -}}
{{- end }}
{{- with $general }}
general_settings:
{{ toYaml . | indent 2 }}
{{- end }}
{{- end -}}

{{/* A change of config.yaml changes this checksum, which rolls the pods. */}}
{{- define "dragoman.configChecksum" -}}
{{- include "dragoman.config" . | sha256sum -}}
{{- end -}}

{{/* Fails unless every os.environ/NAME reference is an entry of secret.env. */}}
{{- define "dragoman.checkKeyRefs" -}}
{{- $env := .Values.secret.env | default dict -}}
{{- range $i, $entry := .Values.modelList -}}
{{- $name := trimPrefix "os.environ/" (toString $entry.proxy_params.api_key) -}}
{{- if not (hasKey $env $name) -}}
{{- fail (printf "modelList[%d].proxy_params.api_key reads os.environ/%s, which secret.env does not provide: add \"%s: <key in Secret %s>\" to secret.env" $i $name $name (toString $.Values.secret.name)) -}}
{{- end -}}
{{- end -}}
{{- with .Values.generalSettings.master_key -}}
{{- $name := trimPrefix "os.environ/" (toString .) -}}
{{- if not (hasKey $env $name) -}}
{{- fail (printf "generalSettings.master_key reads os.environ/%s, which secret.env does not provide: add \"%s: <key in Secret %s>\" to secret.env" $name $name (toString $.Values.secret.name)) -}}
{{- end -}}
{{- end -}}
{{- with .Values.database.url -}}
{{- $name := trimPrefix "os.environ/" (toString .) -}}
{{- if not (hasKey $env $name) -}}
{{- fail (printf "database.url reads os.environ/%s, which secret.env does not provide: put the postgres:// URL in Secret %s and add \"%s: <its key there>\" to secret.env" $name (toString $.Values.secret.name) $name) -}}
{{- end -}}
{{- end -}}
{{- if and $env (not $.Values.secret.name) -}}
{{- fail "secret.env lists variables but secret.name is empty: name the existing Secret that holds the keys" -}}
{{- end -}}
{{- end -}}

{{/*
The environment variable holding the key clients send, empty with
proxy.noAuth: general_settings.master_key's variable, else PROXY_API_KEY.
*/}}
{{- define "dragoman.clientKeyEnv" -}}
{{- if .Values.generalSettings.master_key -}}
{{- trimPrefix "os.environ/" (toString .Values.generalSettings.master_key) -}}
{{- else if get (.Values.secret.env | default dict) "PROXY_API_KEY" -}}
PROXY_API_KEY
{{- else if not .Values.proxy.noAuth -}}
{{- fail "no client key: add PROXY_API_KEY to secret.env (or set generalSettings.master_key: os.environ/NAME), or set proxy.noAuth: true on a trusted network" -}}
{{- end -}}
{{- end -}}

{{/*
The variables the pods read from the Secret: those the config refers to
(os.environ/NAME) and PROXY_API_KEY when secret.env maps it; other entries
of secret.env (such as the defaults' BACKEND_API_KEY merged into a values
file that does not use it) are left out, so the Secret need not hold them.
*/}}
{{- define "dragoman.secretVars" -}}
{{- $env := .Values.secret.env | default dict -}}
{{- $names := dict -}}
{{- range .Values.modelList -}}
{{- $_ := set $names (trimPrefix "os.environ/" (toString .proxy_params.api_key)) true -}}
{{- end -}}
{{- with .Values.generalSettings.master_key -}}
{{- $_ := set $names (trimPrefix "os.environ/" (toString .)) true -}}
{{- end -}}
{{- with .Values.database.url -}}
{{- $_ := set $names (trimPrefix "os.environ/" (toString .)) true -}}
{{- end -}}
{{- if get $env "PROXY_API_KEY" -}}
{{- $_ := set $names "PROXY_API_KEY" true -}}
{{- end -}}
{{- keys $names | sortAlpha | join "," -}}
{{- end -}}

{{/* The Secret's variables as env entries, for the proxy and the warmer. */}}
{{- define "dragoman.secretEnv" -}}
{{- $entries := list -}}
{{- range compact (splitList "," (include "dragoman.secretVars" .)) -}}
{{- $ref := dict "name" $.Values.secret.name "key" (get $.Values.secret.env .) -}}
{{- $entries = append $entries (dict "name" . "valueFrom" (dict "secretKeyRef" $ref)) -}}
{{- end -}}
{{- with $entries }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/* The proxy's terminationGracePeriodSeconds: above preStop sleep + --grace. */}}
{{- define "dragoman.terminationGrace" -}}
{{- $floor := add .Values.proxy.preStopSleepSeconds .Values.proxy.graceSeconds -}}
{{- if kindIs "invalid" .Values.proxy.terminationGracePeriodSeconds -}}
{{- add $floor 10 -}}
{{- else if le (int .Values.proxy.terminationGracePeriodSeconds) (int $floor) -}}
{{- fail (printf "proxy.terminationGracePeriodSeconds (%v) must exceed proxy.preStopSleepSeconds + proxy.graceSeconds (%v), or Kubernetes kills streams still draining: raise it or leave it null" .Values.proxy.terminationGracePeriodSeconds $floor) -}}
{{- else -}}
{{- int .Values.proxy.terminationGracePeriodSeconds -}}
{{- end -}}
{{- end -}}

{{/* Hardened pod and container security contexts (the images run as 65534). */}}
{{- define "dragoman.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65534
runAsGroup: 65534
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "dragoman.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Egress when restricted: DNS, then networkPolicy.egress (the backends). */}}
{{- define "dragoman.egressRules" -}}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{ toYaml .Values.networkPolicy.egress }}
{{- end -}}
