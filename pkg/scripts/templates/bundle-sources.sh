# {{if and .Remove .Check}}Says whether the offline bundle's package source gpukit added is there
# ("pending: ..."), and changes nothing{{else if .Remove}}Removes the offline bundle's package source gpukit added{{else if .Check}}Says which of the bundle's package source files differ from what gpukit
# writes ("pending: ..."), and changes nothing{{else}}Points apt at the offline bundle's repository of this host's distribution
# ({{.URL}}), trusting the bundle's key only for it (signed-by){{end}}.
{{template "put"}}
keyring=/usr/share/keyrings/gpukit-bundle.asc
list=/etc/apt/sources.list.d/gpukit-bundle.list
{{- if and .Remove .Check}}
if [ -e "$list" ] || [ -e "$keyring" ]; then echo "pending: the bundle's package source"; fi
{{- else if .Remove}}
if [ -e "$list" ] || [ -e "$keyring" ]; then
  rm -f "$list" "$keyring"
  echo "gpukit: the bundle's package source removed"
fi
{{- else if .Check}}
if [ "$(cat "$keyring" 2>/dev/null)" != {{quote .Key}} ]; then echo "pending: the bundle's key"; fi
if [ "$(cat "$list" 2>/dev/null)" != "deb [signed-by=$keyring] {{.URL}} ./" ]; then echo "pending: the bundle's source"; fi
{{- else}}
changed=0
if put "$keyring" {{quote .Key}}; then changed=1; fi
if put "$list" "deb [signed-by=$keyring] {{.URL}} ./"; then changed=1; fi
if [ "$changed" = 1 ]; then
  # This source's index only: the host's others may be out of reach.
  apt-get update -q -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
  echo "gpukit: package sources changed"
fi
{{- end}}
