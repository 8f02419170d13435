# Installs the CUDA toolkit {{.CUDA}} (compilers and libraries for building
# on the host; containers bring their own) as cuda-toolkit-{{.PackageVersion}},
# which stays within {{.CUDA}}; the driver was checked against it before.
{{template "pm"}}
{{- if eq .Family.PackageManager "apt"}}
apt-get install -y -q --no-install-recommends cuda-toolkit-{{.PackageVersion}}
{{- else}}
dnf install -y -q cuda-toolkit-{{.PackageVersion}}
{{- end}}
# Where the toolkit puts nvcc; login shells find it through the profile.
cat >/etc/profile.d/gpukit-cuda.sh <<'PROFILE'
# Written by gpukit: the CUDA toolkit {{.CUDA}}.
case ":$PATH:" in *:/usr/local/cuda-{{.CUDA}}/bin:*) ;; *) PATH=/usr/local/cuda-{{.CUDA}}/bin:$PATH ;; esac
PROFILE
test -x /usr/local/cuda-{{.CUDA}}/bin/nvcc && /usr/local/cuda-{{.CUDA}}/bin/nvcc --version | tail -n 2
