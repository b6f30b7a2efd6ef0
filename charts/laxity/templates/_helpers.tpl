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
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{/*
The manager's ServiceAccount: the one the chart creates (serviceAccount.name,
else the full name), or the existing one serviceAccount.name names.
*/}}
{{- define "laxity.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "laxity.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: name the existing ServiceAccount the manager runs as, or set serviceAccount.create=true" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The ServiceAccount whose token the ServiceMonitor scrapes with, and its token Secret. */}}
{{- define "laxity.scraperName" -}}
{{- printf "%s-metrics-scraper" (include "laxity.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Resources of the generated manager rules that are cluster-scoped, as
<resource>.<group> (the core group has none). With watchNamespaces, rules on
these stay in the ClusterRole and every other rule goes to a Role in each
watched namespace. test/chart checks this list against the scopes the API
server reports for every resource in files/manager-role.yaml, so a new
cluster-scoped kind in the RBAC markers fails the tests until it is added.
*/}}
{{- define "laxity.clusterScopedResources" -}}
namespaces
nodes
nodepools.karpenter.sh
priorityclasses.scheduling.k8s.io
tenantpolicies.laxity.dev
{{- end }}

{{/*
The manager's rules generated from the RBAC markers (files/manager-role.yaml),
as a YAML list: with .scope "cluster" only those on cluster-scoped resources,
with "namespaced" only the others, with "all" every one as generated. A rule
naming several API groups is split into one rule per group.
*/}}
{{- define "laxity.managerRules" -}}
{{- $generated := .root.Files.Get "files/manager-role.yaml" | fromYaml }}
{{- $rules := required "files/manager-role.yaml has no rules: run `make manifests`" $generated.rules }}
{{- if eq .scope "all" }}
{{- toYaml $rules }}
{{- else }}
{{- $clusterScoped := include "laxity.clusterScopedResources" .root | splitList "\n" }}
{{- $wantCluster := eq .scope "cluster" }}
{{- $out := list }}
{{- range $rule := $rules }}
{{- range $group := $rule.apiGroups }}
{{- $picked := list }}
{{- range $resource := $rule.resources }}
{{- $key := trimSuffix "." (printf "%s.%s" (splitList "/" $resource | first) $group) }}
{{- if eq (has $key $clusterScoped) $wantCluster }}
{{- $picked = append $picked $resource }}
{{- end }}
{{- end }}
{{- if $picked }}
{{- $split := dict "apiGroups" (list $group) "resources" $picked "verbs" $rule.verbs }}
{{- with $rule.resourceNames }}
{{- $_ := set $split "resourceNames" . }}
{{- end }}
{{- $out = append $out $split }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}
{{- end }}
