{{/* The release's full name: <release>-veil, or <release> when it already says veil. */}}
{{- define "veil.fullname" -}}
{{- if contains "veil" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-veil" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "veil.selectorLabels" -}}
app.kubernetes.io/name: veil
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "veil.labels" -}}
{{ include "veil.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The image: pinned by digest (repository@sha256:…) when image.digest is set, else repository:tag. */}}
{{- define "veil.image" -}}
{{- if .Values.image.digest -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" .Values.image.digest) }}{{ fail "image.digest must be sha256: and 64 hex digits" }}{{ end -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- define "veil.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "veil.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "veil.kekSecret" -}}
{{- .Values.kek.existingSecret | default (printf "%s-kek" (include "veil.fullname" .)) -}}
{{- end -}}

{{- define "veil.controlStoreSecret" -}}
{{- .Values.controlStore.existingSecret | default (printf "%s-control-store" (include "veil.fullname" .)) -}}
{{- end -}}

{{/* VEIL_BASE_URL, the token issuer serve signs as and gateway and unprotect accept: serve.baseUrl, else serve's Service. */}}
{{- define "veil.baseUrl" -}}
{{- .Values.serve.baseUrl | default (printf "http://%s-serve:%v" (include "veil.fullname" .) .Values.serve.service.port) -}}
{{- end -}}

{{/* The --config argument: the mounted ConfigMap's file, else a path inside the image. */}}
{{- define "veil.configPath" -}}
{{- if or .Values.config.inline .Values.config.existingConfigMap -}}
/etc/veil/veil.yaml
{{- else -}}
{{- .Values.config.file -}}
{{- end -}}
{{- end -}}

{{/* A pipeline's consumer group: its groupId, else veil's default veil-protect-<name> (src/stream/protect/pipeline.ts). */}}
{{- define "veil.pipelineGroup" -}}
{{- .groupId | default (printf "veil-protect-%s" .name) -}}
{{- end -}}

{{/* A DNS-1123 name part of a pipeline's name (pipeline names may hold _ and .). */}}
{{- define "veil.pipelineSlug" -}}
{{- .name | lower | replace "_" "-" | replace "." "-" | trunc 20 | trimSuffix "-" -}}
{{- end -}}

{{/*
The environment every veil container has. The data dir is an emptyDir: VEIL_DATA_DIR_EPHEMERAL
tells veil so, and a configuration that scopes keys to the data subject is then refused on a local
subject-key store (it would lose the keys with the pod). Kafka client settings are librdkafka's
property names (VEIL_KAFKA_<PROPERTY>). Secrets come in by envFrom.
*/}}
{{- define "veil.baseEnv" -}}
- name: VEIL_DATA_DIR
  value: /var/lib/veil
- name: VEIL_DATA_DIR_EPHEMERAL
  value: "true"
- name: VEIL_HOST
  value: 0.0.0.0
- name: VEIL_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- with .Values.veilEnv }}
- name: VEIL_ENV
  value: {{ . | quote }}
{{- end }}
{{- with .Values.subjectStore }}
- name: VEIL_SUBJECT_STORE
  value: {{ . | quote }}
{{- end }}
{{- range $k, $v := .Values.kafka.settings }}
- name: VEIL_KAFKA_{{ $k | upper | replace "." "_" }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end -}}

{{/*
A container's env: the chart's entries (veil.baseEnv, then the component's "env"), then extraEnv
and the component's extraEnv. A name given in extraEnv replaces the chart's entry of that name
(one entry per name: with two, the later would win and the chart's would be the one kept), and
within extraEnv the last of a name wins.
*/}}
{{- define "veil.containerEnv" -}}
{{- $root := .root -}}
{{- $chart := concat (fromYamlArray (include "veil.baseEnv" $root)) (fromYamlArray (.env | default "")) -}}
{{- $byName := dict -}}
{{- $order := list -}}
{{- range concat ($root.Values.extraEnv | default list) (.component.extraEnv | default list) -}}
{{- if not (hasKey $byName .name) }}{{ $order = append $order .name }}{{ end -}}
{{- /* a value is a string to Kubernetes (--set extraEnv[0].value=45000 gives a number) */ -}}
{{- $_ := set $byName .name (ternary (merge (dict "value" (toString .value)) (omit . "value")) . (hasKey . "value")) -}}
{{- end -}}
{{- $out := list -}}
{{- range $chart }}{{ if not (hasKey $byName .name) }}{{ $out = append $out . }}{{ end }}{{ end -}}
{{- range $order }}{{ $out = append $out (get $byName .) }}{{ end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* envFrom: the KEK's and the control store's Secrets, the Kafka client's credentials; "registry": the schema registry's. */}}
{{- define "veil.envFrom" -}}
{{- $root := .root -}}
- secretRef:
    name: {{ include "veil.kekSecret" $root }}
- secretRef:
    name: {{ include "veil.controlStoreSecret" $root }}
{{- with $root.Values.kafka.existingSecret }}
- secretRef:
    name: {{ . }}
{{- end }}
{{- if .registry }}
{{- with $root.Values.schemaRegistry.existingSecret }}
- secretRef:
    name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "veil.volumeMounts" -}}
{{- $root := .root -}}
- name: data
  mountPath: /var/lib/veil
- name: tmp
  mountPath: /tmp
{{- if or $root.Values.config.inline $root.Values.config.existingConfigMap }}
- name: config
  mountPath: /etc/veil
  readOnly: true
{{- end }}
{{- with concat ($root.Values.extraVolumeMounts | default list) (.component.extraVolumeMounts | default list) }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "veil.volumes" -}}
{{- $root := .root -}}
- name: data
  emptyDir:
    sizeLimit: {{ $root.Values.dataDir.sizeLimit }}
- name: tmp
  emptyDir:
    medium: Memory
    sizeLimit: {{ $root.Values.tmp.sizeLimit }}
{{- if or $root.Values.config.inline $root.Values.config.existingConfigMap }}
- name: config
  configMap:
    name: {{ $root.Values.config.existingConfigMap | default (printf "%s-config" (include "veil.fullname" $root)) }}
    items:
      - key: veil.yaml
        path: veil.yaml
{{- end }}
{{- with concat ($root.Values.extraVolumes | default list) (.component.extraVolumes | default list) }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The pod-level settings every component shares; "selector" picks its spread constraint, "component" its extra volumes. */}}
{{- define "veil.podSpec" -}}
{{- $root := .root -}}
serviceAccountName: {{ include "veil.serviceAccountName" $root }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $root.Values.spreadAcrossNodes }}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "veil.selectorLabels" $root | nindent 8 }}
        {{- toYaml .selector | nindent 8 }}
{{- end }}
volumes:
  {{- include "veil.volumes" . | nindent 2 }}
{{- end -}}

{{/* Pod annotations: a changed configuration or Secret made by the chart rolls the pods. */}}
{{- define "veil.podAnnotations" -}}
checksum/config: {{ printf "%s|%s|%s" .Values.config.inline .Values.config.existingConfigMap .Values.config.file | sha256sum }}
checksum/secrets: {{ printf "%s|%s|%s|%s" (toJson .Values.kek.settings) .Values.kek.existingSecret (toJson .Values.controlStore.settings) .Values.controlStore.existingSecret | sha256sum }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "veil.pdb" -}}
{{- $root := .root -}}
{{- if $root.Values.pdb.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  labels:
    {{- include "veil.labels" $root | nindent 4 }}
    {{- toYaml .selector | nindent 4 }}
spec:
  maxUnavailable: {{ $root.Values.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "veil.selectorLabels" $root | nindent 6 }}
      {{- toYaml .selector | nindent 6 }}
{{- end }}
{{- end -}}

{{/* Values of earlier chart versions that no longer mean what they did: refused, not silently ignored. */}}
{{- define "veil.refuseRetired" -}}
{{- if hasKey .Values.stream "schemaRegistryUrl" }}{{ fail "stream.schemaRegistryUrl is gone: SCHEMA_REGISTRY_URL may carry credentials, so it comes from a Secret (schemaRegistry.existingSecret)" }}{{ end -}}
{{- if hasKey .Values.stream "staticMembership" }}{{ fail "stream.staticMembership is gone: static group membership comes with stable pod names, stream.workload: StatefulSet (docs/kubernetes.md)" }}{{ end -}}
{{- if and .Values.keda.enabled .Values.stream.autoscaling.enabled }}{{ fail "keda.enabled and stream.autoscaling.enabled would both scale the protect pipelines: choose one" }}{{ end -}}
{{- if not (has .Values.stream.workload (list "Deployment" "StatefulSet")) }}{{ fail "stream.workload must be Deployment or StatefulSet" }}{{ end -}}
{{- end -}}
