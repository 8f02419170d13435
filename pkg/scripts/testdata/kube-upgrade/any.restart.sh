set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive

# Restarts the kubelet on its new binary and waits until it answers.
systemctl daemon-reload
systemctl restart kubelet
healthy() {
  if command -v curl >/dev/null 2>&1; then
    [ "$(curl -fsS --max-time 2 http://127.0.0.1:10248/healthz 2>/dev/null)" = ok ]
  else
    # no curl: bash's own connection, HTTP/1.0
    exec 3<>/dev/tcp/127.0.0.1/10248 2>/dev/null || return 1
    printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3
    local body
    body=$(timeout 2 cat <&3 | tail -n 1)
    exec 3>&-
    [ "$body" = ok ]
  fi
}
for _ in $(seq 60); do
  if healthy; then
    echo "gpukit: kubelet $(kubelet --version | cut -d' ' -f2) running"
    exit 0
  fi
  sleep 2
done
echo "gpukit: the kubelet does not answer on 127.0.0.1:10248/healthz 120s after its restart" >&2
systemctl status kubelet --no-pager -l 2>&1 | tail -n 15 >&2 || true
exit 1
