# Keeps the GPUs initialised between jobs (persistence mode): without it the
# driver tears the GPU state down when the last process exits, and the next
# job pays seconds of initialisation and loses MIG and clock settings.
{{template "pm"}}
{{template "put"}}
dropin=/etc/systemd/system/nvidia-persistenced.service.d/gpukit.conf
want='[Service]
ExecStart=
ExecStart=/usr/bin/nvidia-persistenced --user root --persistence-mode --verbose'
# Some driver packages only recommend the daemon (Debian's nvidia-driver): it
# is installed here, at the driver's release where the repository has it (the
# driver's pin gives it that one, down as well as up), and held with the driver.
{{- if eq .Family.PackageManager "apt"}}
apt-mark unhold nvidia-persistenced >/dev/null 2>&1 || true
apt-get install -y -q --no-install-recommends --allow-downgrades nvidia-persistenced
apt-mark hold nvidia-persistenced >/dev/null
{{- else}}
dnf install -y -q nvidia-persistenced
{{- end}}
if put "$dropin" "$want"; then systemctl daemon-reload; fi
systemctl enable nvidia-persistenced
# A persistence daemon started before the driver loaded (fresh install,
# reboot pending) starts at the next boot.
if [ -e /sys/module/nvidia ]; then systemctl restart nvidia-persistenced; fi
