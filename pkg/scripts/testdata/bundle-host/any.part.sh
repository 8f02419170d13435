set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Puts a part of an offline bundle's new files in place (a tar gpukit
# uploaded; the service is (re)started after the last part).
dir=/var/lib/gpukit/bundle
incoming=/var/lib/gpukit/bundle.incoming.tar
if [ -n "$incoming" ] && [ -f "$incoming" ]; then
  mkdir -p "$dir"
  tar -xf "$incoming" -C "$dir" --no-same-owner --no-same-permissions
  rm -f "$incoming"
fi
echo "gpukit: a part of the bundle's files in place"
