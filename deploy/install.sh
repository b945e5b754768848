#!/usr/bin/env bash
# Installs the Kakeya binaries, the preset catalog and the systemd unit on a runner host.
# Usage: sudo deploy/install.sh [BUILD_DIR]   (build first: scripts/build.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
prefix="${PREFIX:-/usr/local}"
for b in kakeya kakeya-runner kakeya-engine; do
  [ -x "$build/$b" ] || { echo "install: $build/$b missing; run scripts/build.sh first" >&2; exit 1; }
  install -m 0755 "$build/$b" "$prefix/bin/$b"
done
# The catalog is read from the runner's own install, never from a request branch.
install -d "$prefix/share/kakeya"
install -m 0644 "$root/manifests/presets.yaml" "$prefix/share/kakeya/presets.yaml"
install -d /etc/kakeya
[ -f /etc/kakeya/runner.yaml ] || install -m 0640 "$root/deploy/runner.example.yaml" /etc/kakeya/runner.yaml
if command -v systemctl >/dev/null && [ -d /etc/systemd/system ]; then
  id kakeya >/dev/null 2>&1 || useradd --system --home /var/lib/kakeya --shell /usr/sbin/nologin kakeya
  install -m 0644 "$root/deploy/kakeya-runner.service" /etc/systemd/system/kakeya-runner.service
  systemctl daemon-reload
  echo "install: edit /etc/kakeya/runner.yaml (catalog_path: $prefix/share/kakeya/presets.yaml), then"
  echo "         systemctl enable --now kakeya-runner && kakeya-runner doctor -c /etc/kakeya/runner.yaml"
fi
