# Moves an uploaded file into place: into a temporary file in the
# destination's directory first (created if missing), then renamed over the
# destination, so that readers see the old file or the new one, never a
# partial one. The upload directory is removed in any case.
# $1: the uploaded file (alone in its private directory), $2: destination, $3: octal mode.
set -eu
src=$1 dst=$2 mode=$3 tmp=
trap 'rm -rf "${src%/*}"; [ -z "$tmp" ] || rm -f "$tmp"' EXIT
if [ -d "$dst" ]; then echo "$dst is a directory" >&2; exit 1; fi
dir=$(dirname "$dst")
mkdir -p "$dir"
tmp=$(mktemp "$dir/.gpukit-upload.XXXXXXXX")
install -m "$mode" "$src" "$tmp"
mv -f "$tmp" "$dst"
tmp=
