{{- if .Remove}}
# Removes a snapshot gpukit etcd backup copied back and checked.
rm -f -- {{quote .Path}}
echo "gpukit: removed {{.Path}}"
{{- else}}
# Writes a snapshot to stdout, for gpukit etcd backup to copy back (the
# output is the snapshot itself: never logged).
exec cat -- {{quote .Path}}
{{- end}}
