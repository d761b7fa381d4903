{{/* The release's resource name, within the 63 characters of a DNS label. */}}
{{- define "lifeline.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lifeline.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "lifeline.labels" -}}
{{ include "lifeline.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "lifeline.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "lifeline.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Refuses settings that would lose work: replicas need a shared database and a shared data volume. */}}
{{- define "lifeline.validate" -}}
{{- if and .Values.tls.existingSecret (not (contains "tls-cert" .Values.config)) -}}
{{- fail "tls.existingSecret is mounted at /etc/lifeline/tls: add tls-cert = \"/etc/lifeline/tls/tls.crt\" and tls-key = \"/etc/lifeline/tls/tls.key\" to [server] in values.config" -}}
{{- end -}}
{{- if gt (int .Values.replicaCount) 1 -}}
{{- if not .Values.database.existingSecret -}}
{{- fail "replicaCount > 1 needs PostgreSQL: set database.existingSecret (SQLite is one process's file)" -}}
{{- end -}}
{{- if and .Values.persistence.enabled (eq .Values.persistence.accessMode "ReadWriteOnce") (not .Values.persistence.existingClaim) -}}
{{- fail "replicaCount > 1 needs a data volume every replica can read: set persistence.accessMode=ReadWriteMany" -}}
{{- end -}}
{{- end -}}
{{- end -}}
