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
{{- range $key, $name := dict "preset" "PRESET" "headers" "HEADERS" "caFile" "CA_FILE" "basicAuthUser" "BASIC_AUTH_USER" "basicAuthPasswordFile" "BASIC_AUTH_PASSWORD_FILE" "sigv4Region" "SIGV4_REGION" }}
{{- with (index $p $key) }}
- name: PODSIZER_PROMETHEUS_{{ $name }}
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
