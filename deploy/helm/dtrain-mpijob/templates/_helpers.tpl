{{- define "dtrain.name" -}}
{{- .Values.name | lower | replace "_" "-" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "dtrain.claim" -}}
{{- default (printf "%s-data" (include "dtrain.name" .)) .Values.data.claimName -}}
{{- end -}}

{{- define "dtrain.labels" -}}
app.kubernetes.io/name: dtrain
app.kubernetes.io/instance: {{ .Release.Name }}
dtrain/job: {{ include "dtrain.name" . }}
{{- end -}}

{{/* The SM_* variables the algorithm reads, and the user's environment. */}}
{{- define "dtrain.env" -}}
{{- $jobDir := printf "%s/jobs/%s" .Values.data.mountPath .Values.name -}}
- name: TRAINING_JOB_NAME
  value: {{ .Values.name | quote }}
- name: SM_MODEL_DIR
  value: {{ printf "%s/model" $jobDir | quote }}
- name: SM_OUTPUT_DIR
  value: {{ printf "%s/output" $jobDir | quote }}
- name: SM_OUTPUT_DATA_DIR
  value: {{ printf "%s/output/data" $jobDir | quote }}
- name: SM_CHECKPOINT_DIR
  value: {{ printf "%s/checkpoints" $jobDir | quote }}
- name: SM_CHANNELS
  value: {{ .Values.channels | toJson | quote }}
- name: SM_HPS
  value: {{ .Values.hyperparameters | toJson | quote }}
- name: SM_NUM_GPUS
  value: {{ .Values.resources.worker.gpus | toString | quote }}
{{- range .Values.channels }}
- name: {{ printf "SM_CHANNEL_%s" (upper .) }}
  value: {{ printf "%s/channels/%s" $.Values.data.mountPath . | quote }}
{{- end }}
{{- range $key, $value := .Values.hyperparameters }}
- name: {{ printf "SM_HP_%s" (upper $key) }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- range $key, $value := .Values.env }}
- name: {{ $key }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{- define "dtrain.volumes" -}}
volumes:
  - name: data
    persistentVolumeClaim:
      claimName: {{ include "dtrain.claim" . }}
{{- end -}}

{{- define "dtrain.volumeMounts" -}}
volumeMounts:
  - name: data
    mountPath: {{ .Values.data.mountPath }}
{{- end -}}
