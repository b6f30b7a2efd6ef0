{{/* The chart name, or nameOverride. */}}
{{- define "laxity.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the release's objects: fullnameOverride, else the release name
when it already contains the chart name, else <release>-<chart>. Cut to 63
characters, the longest label value.
*/}}
{{- define "laxity.fullname" -}}
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

{{/* The metrics Service's name, which must stay a DNS label. */}}
{{- define "laxity.metricsServiceName" -}}
{{- printf "%s-metrics" (include "laxity.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "laxity.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "laxity.labels" -}}
helm.sh/chart: {{ include "laxity.chart" . }}
{{ include "laxity.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the manager's pods; immutable once a Deployment exists. */}}
{{- define "laxity.selectorLabels" -}}
app.kubernetes.io/name: {{ include "laxity.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "laxity.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
