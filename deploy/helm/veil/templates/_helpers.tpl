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

{{- define "veil.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
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

{{/* The environment every veil container has; the Secrets come in by envFrom. */}}
{{- define "veil.env" -}}
- name: VEIL_DATA_DIR
  value: /var/lib/veil
- name: VEIL_HOST
  value: 0.0.0.0
- name: VEIL_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- with .Values.veilEnv }}
- name: VEIL_ENV
  value: {{ . | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "veil.envFrom" -}}
- secretRef:
    name: {{ include "veil.kekSecret" . }}
- secretRef:
    name: {{ include "veil.controlStoreSecret" . }}
{{- end -}}

{{/* Static group membership: the pod's name as the Kafka consumer's group.instance.id. */}}
{{- define "veil.groupInstanceEnv" -}}
{{- if .Values.stream.staticMembership -}}
- name: VEIL_KAFKA_GROUP_INSTANCE_ID
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end }}
{{- end -}}

{{- define "veil.volumeMounts" -}}
- name: data
  mountPath: /var/lib/veil
- name: tmp
  mountPath: /tmp
{{- if or .Values.config.inline .Values.config.existingConfigMap }}
- name: config
  mountPath: /etc/veil
  readOnly: true
{{- end }}
{{- end -}}

{{- define "veil.volumes" -}}
- name: data
  emptyDir:
    sizeLimit: {{ .Values.dataDir.sizeLimit }}
- name: tmp
  emptyDir:
    medium: Memory
    sizeLimit: {{ .Values.tmp.sizeLimit }}
{{- if or .Values.config.inline .Values.config.existingConfigMap }}
- name: config
  configMap:
    name: {{ .Values.config.existingConfigMap | default (printf "%s-config" (include "veil.fullname" .)) }}
    items:
      - key: veil.yaml
        path: veil.yaml
{{- end }}
{{- end -}}

{{/* The pod-level settings every component shares; "component" selects its spread constraint. */}}
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
  {{- include "veil.volumes" $root | nindent 2 }}
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
