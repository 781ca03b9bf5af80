{{/* Names, labels, image and security settings shared by every template. */}}

{{- define "podsizer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "podsizer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "podsizer.recommender.fullname" -}}
{{- printf "%s-recommender" (include "podsizer.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "podsizer.webhook.fullname" -}}
{{- printf "%s-webhook" (include "podsizer.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "podsizer.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "podsizer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: podsizer
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "podsizer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "podsizer.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "podsizer.recommender.serviceAccountName" -}}
{{- default (include "podsizer.recommender.fullname" .) .Values.serviceAccount.recommender.name }}
{{- end }}

{{- define "podsizer.webhook.serviceAccountName" -}}
{{- default (include "podsizer.webhook.fullname" .) .Values.serviceAccount.webhook.name }}
{{- end }}

{{- define "podsizer.webhook.secretName" -}}
{{- default (printf "%s-tls" (include "podsizer.webhook.fullname" .)) .Values.certs.secretName }}
{{- end }}

{{- define "podsizer.webhook.clientSecretName" -}}
{{- printf "%s-client" (include "podsizer.webhook.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /* The API server's client certificate's CN when the chart makes it. */ -}}
{{- define "podsizer.webhook.clientName" -}}
podsizer-apiserver-client
{{- end }}

{{- /* "configmap" (the user's CA), "chart" (the chart's own client Secret) or "" (client auth off). */ -}}
{{- define "podsizer.webhook.clientAuthSource" -}}
{{- $c := .Values.webhook.clientAuth }}
{{- if $c.enabled }}
{{- if $c.caConfigMap }}configmap
{{- else if has .Values.certs.mode (list "generate" "cert-manager") }}chart
{{- else }}
{{- fail (printf "webhook.clientAuth.enabled with certs.mode=%s needs webhook.clientAuth.caConfigMap (the CA of the API server's client certificate), or webhook.clientAuth.enabled=false where the API server cannot present one (docs/webhook.md#authenticated-admission)" .Values.certs.mode) }}
{{- end }}
{{- end }}
{{- end }}

{{- define "podsizer.webhook.caSecretName" -}}
{{- printf "%s-ca" (include "podsizer.webhook.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "podsizer.certRenewer.fullname" -}}
{{- printf "%s-cert-renewer" (include "podsizer.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "podsizer.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
{{- end }}

{{/* Pod-level security context admissible under OpenShift restricted-v2 and Kubernetes "restricted":
no fixed UID/GID/fsGroup (OpenShift assigns them from the namespace range; the image's USER is numeric). */}}
{{- define "podsizer.podSecurityContext" -}}
runAsNonRoot: true
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "podsizer.containerSecurityContext" -}}
allowPrivilegeEscalation: false
privileged: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "podsizer.envMap" -}}
{{- range $k, $v := . }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end }}

{{/*
The pod plan's policy: the same variables for the webhook (what it writes) and the recommender (what it shows).
*/}}
{{- define "podsizer.planEnv" -}}
- name: PODSIZER_DEFAULT_MODE
  value: {{ .Values.webhook.defaultMode | quote }}
- name: PODSIZER_LIMIT_POLICY
  value: {{ .Values.plan.limitPolicy | quote }}
- name: PODSIZER_MIN_CONFIDENCE
  value: {{ .Values.plan.minConfidence | quote }}
- name: PODSIZER_GPU_RESIZE
  value: {{ .Values.gpu.resizeDefault | quote }}
- name: PODSIZER_ALLOW_MIG_SWAP
  value: {{ .Values.gpu.allowMigSwap | quote }}
- name: PODSIZER_MAX_CPU_CORES
  value: {{ .Values.plan.maxCpuCores | quote }}
- name: PODSIZER_MAX_MEMORY_BYTES
  value: {{ .Values.plan.maxMemoryBytes | quote }}
- name: PODSIZER_MAX_GPUS
  value: {{ .Values.plan.maxGpus | quote }}
- name: PODSIZER_MAX_CHANGE_FACTOR
  value: {{ .Values.plan.maxChangeFactor | quote }}
{{- end }}

{{- define "podsizer.console.fullname" -}}
{{- printf "%s-console" (include "podsizer.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "podsizer.console.serviceAccountName" -}}
{{- default (include "podsizer.console.fullname" .) .Values.serviceAccount.console.name }}
{{- end }}

{{- define "podsizer.updater.fullname" -}}
{{- printf "%s-updater" (include "podsizer.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "podsizer.updater.serviceAccountName" -}}
{{- default (include "podsizer.updater.fullname" .) .Values.serviceAccount.updater.name }}
{{- end }}
