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

{{/*
Labels of every object the chart renders: the chart's own and commonLabels,
the chart's winning over a common label of the same key (merge keeps the
first dict's keys).
*/}}
{{- define "laxity.labels" -}}
{{- $labels := dict "helm.sh/chart" (include "laxity.chart" .) "app.kubernetes.io/version" (.Chart.AppVersion | toString) "app.kubernetes.io/managed-by" .Release.Service }}
{{- toYaml (merge $labels (include "laxity.selectorLabels" . | fromYaml) (.Values.commonLabels | default dict)) }}
{{- end }}

{{/* Labels that select the manager's pods; immutable once a Deployment exists. */}}
{{- define "laxity.selectorLabels" -}}
app.kubernetes.io/name: {{ include "laxity.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The manager's image: by digest when one is given, else by tag. */}}
{{- define "laxity.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}
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

{{/*
The job label of the manager's metrics, which the chart's monitors set and
its alerts match: metrics.prometheusRule.job, else the metrics Service's
name (a ServiceMonitor's default job).
*/}}
{{- define "laxity.metricsJob" -}}
{{- .Values.metrics.prometheusRule.job | default (include "laxity.metricsServiceName" .) }}
{{- end }}

{{/*
The tlsConfig of a monitor (.monitor names it in errors, .values are its
values): the one given, else verification against the CA of
metrics.tls.secretName for the metrics Service's DNS name. Without either the
manager's certificate is self-signed, which no scraper can verify: the
render fails rather than skip verification unasked.
*/}}
{{- define "laxity.monitorTLSConfig" -}}
{{- $root := .root }}
{{- if .values.tlsConfig }}
{{- toYaml .values.tlsConfig }}
{{- else if $root.Values.metrics.tls.secretName -}}
serverName: {{ printf "%s.%s.svc" (include "laxity.metricsServiceName" $root) $root.Release.Namespace }}
ca:
  secret:
    name: {{ $root.Values.metrics.tls.secretName }}
    key: ca.crt
{{- else }}
{{- fail (printf "metrics.%s.tlsConfig: the manager's metrics certificate is self-signed unless metrics.tls.secretName names a kubernetes.io/tls Secret for it (with ca.crt, e.g. cert-manager's), so a scrape cannot verify it: set metrics.tls.secretName, or a tlsConfig with the CA that signed the certificate, or tlsConfig.insecureSkipVerify=true to scrape without verifying" .monitor) }}
{{- end }}
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

{{/*
The manager's affinity: the affinity value, plus, unless it sets a node
affinity of its own, one that keeps the manager off the nodes of the pools
laxity scales (nodes carrying poolNodeAntiAffinity.labelKey). A manager
there would be evicted when laxity scales its pool down, to zero between
windows, and would have to wait for the nodes it asks for to come back.
*/}}
{{- define "laxity.affinity" -}}
{{- $affinity := deepCopy .Values.affinity }}
{{- with .Values.poolNodeAntiAffinity }}
{{- if and .enabled (not (hasKey $affinity "nodeAffinity")) }}
{{- $avoid := dict "matchExpressions" (list (dict "key" .labelKey "operator" "DoesNotExist")) }}
{{- if eq .type "required" }}
{{- $_ := set $affinity "nodeAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (dict "nodeSelectorTerms" (list $avoid))) }}
{{- else }}
{{- $_ := set $affinity "nodeAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "preference" $avoid))) }}
{{- end }}
{{- end }}
{{- end }}
{{- if $affinity }}
{{- toYaml $affinity }}
{{- end }}
{{- end }}
