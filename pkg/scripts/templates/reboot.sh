# Reboots the host a moment after this script has returned, so that the
# command finishes cleanly and gpukit sees the connection go away by itself.
# systemd-run puts the reboot outside this session, which ends when gpukit
# disconnects.
sync
if command -v systemd-run >/dev/null 2>&1; then
  systemd-run --quiet --on-active=2 --timer-property=AccuracySec=100ms /bin/systemctl reboot
else
  nohup setsid sh -c 'sleep 2; reboot' >/dev/null 2>&1 &
fi
echo "gpukit: rebooting in 2 s (boot id $(cat /proc/sys/kernel/random/boot_id))"
