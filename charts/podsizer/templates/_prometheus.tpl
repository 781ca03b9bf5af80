{{/* The Prometheus connection env of the recommender and the console (docs/connections.md). */}}
{{- define "podsizer.prometheusEnv" -}}
{{- $p := .Values.recommender.prometheus -}}
{{- if ne $p.preset "openshift" }}
- name: PODSIZER_PROMETHEUS_URL
  value: {{ $p.url | quote }}
{{- end }}
{{- with $p.bearerTokenFile }}
- name: PODSIZER_PROMETHEUS_BEARER_TOKEN_FILE
  value: {{ . | quote }}
{{- end }}
{{- $files := include "podsizer.prometheusSecretFiles" . | fromYaml }}
{{- range $key, $name := dict "preset" "PRESET" "headers" "HEADERS" "caFile" "CA_FILE" "basicAuthUser" "BASIC_AUTH_USER" "basicAuthPasswordFile" "BASIC_AUTH_PASSWORD_FILE" "sigv4Region" "SIGV4_REGION" "clientCertFile" "CLIENT_CERT_FILE" "clientKeyFile" "CLIENT_KEY_FILE" }}
{{- with (index $p $key | default (index $files $key)) }}
- name: PODSIZER_PROMETHEUS_{{ $name }}
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The file settings a mounted Secret supplies (caSecret, basicAuthPasswordSecret, clientCertSecret); a
Secret and the file setting it supplies together are an error. */}}
{{- define "podsizer.prometheusSecretFiles" -}}
{{- $p := .Values.recommender.prometheus -}}
{{- $out := dict -}}
{{- range $secret, $files := dict "caSecret" (dict "caFile" "/etc/podsizer/prometheus/ca/ca.crt") "basicAuthPasswordSecret" (dict "basicAuthPasswordFile" "/etc/podsizer/prometheus/basic-auth/password") "clientCertSecret" (dict "clientCertFile" "/etc/podsizer/prometheus/client/tls.crt" "clientKeyFile" "/etc/podsizer/prometheus/client/tls.key") }}
{{- if (index $p $secret) }}
{{- range $key, $path := $files }}
{{- if (index $p $key) }}
{{- fail (printf "recommender.prometheus.%s and recommender.prometheus.%s both name the file: set one" $secret $key) }}
{{- end }}
{{- $_ := set $out $key $path }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/* Mounts and volumes of the connection's Secrets, for the recommender and the console. */}}
{{- define "podsizer.prometheusVolumeMounts" -}}
{{- $p := .Values.recommender.prometheus -}}
{{- range $secret, $dir := dict "caSecret" "ca" "basicAuthPasswordSecret" "basic-auth" "clientCertSecret" "client" }}
{{- if (index $p $secret) }}
- name: prometheus-{{ $dir }}
  mountPath: /etc/podsizer/prometheus/{{ $dir }}
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{- define "podsizer.prometheusVolumes" -}}
{{- $p := .Values.recommender.prometheus -}}
{{- range $secret, $dir := dict "caSecret" "ca" "basicAuthPasswordSecret" "basic-auth" "clientCertSecret" "client" }}
{{- with (index $p $secret) }}
- name: prometheus-{{ $dir }}
  secret:
    secretName: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
