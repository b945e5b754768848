#!/usr/bin/env bash
# Installs, upgrades or removes kakeya-runner on a runner host (docs/operator-runbook.md "Install").
#
#   deploy/install.sh [install] [--build DIR]     install, or upgrade what an earlier run installed
#   deploy/install.sh uninstall [--purge]         remove; --purge also removes config, data and user
#
# Idempotent: running `install` twice changes nothing the second time; running it over an older
# install is the upgrade. The operator's files are never overwritten:
#   $SYSCONFDIR/runner.yaml        written once (from deploy/runner.example.yaml with this
#                                  install's paths); kept on upgrade and on uninstall
#   $PREFIX/share/kakeya/presets.yaml   the catalog: replaced on upgrade only while it is still
#                                  the shipped one (presets.yaml.dist records what was shipped);
#                                  an operator's edit is kept and the new catalog is left next to it
# Environment:
#   DESTDIR      staging root (packaging, tests); no account is created and no service manager is
#                called when set. Default: empty
#   PREFIX       binaries in $PREFIX/bin, catalog in $PREFIX/share/kakeya. Default /usr/local
#   SYSCONFDIR   config directory. Default /etc/kakeya (macOS: $PREFIX/etc/kakeya)
#   STATEDIR     the runner's work_dir (jobs, spool, caches, state.json). Default /var/lib/kakeya
#                (macOS: $PREFIX/var/kakeya). systemd: must be /var/lib/<name> (StateDirectory)
#   KAKEYA_USER, KAKEYA_GROUP   the account the runner runs as (names, or numeric ids). Default
#                kakeya:kakeya; created as a system account (no login, no home) when absent and
#                DESTDIR is empty
#   KAKEYA_INIT  systemd | launchd | none. Default: launchd on macOS, systemd where systemd is
#                installed, else none
# Ownership (applied when run as root): $SYSCONFDIR and the config root:$KAKEYA_GROUP 0750/0640
# (the runner reads its config, cannot change it); $STATEDIR and its jobs/, spool/, cache/
# $KAKEYA_USER:$KAKEYA_GROUP 0750. Not root: modes only, with a warning.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
action=install
build="$root/build"
purge=0
while [ $# -gt 0 ]; do
  case "$1" in
    install|upgrade) action=install ;;
    uninstall) action=uninstall ;;
    --purge) purge=1 ;;
    --build) build="${2:?--build needs a directory}"; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (install | uninstall [--purge] | --build DIR)" >&2; exit 64 ;;
  esac
  shift
done

os="$(uname -s)"
destdir="${DESTDIR:-}"
prefix="${PREFIX:-/usr/local}"
if [ "$os" = Darwin ]; then
  sysconfdir="${SYSCONFDIR:-$prefix/etc/kakeya}"
  statedir="${STATEDIR:-$prefix/var/kakeya}"
else
  sysconfdir="${SYSCONFDIR:-/etc/kakeya}"
  statedir="${STATEDIR:-/var/lib/kakeya}"
fi
user="${KAKEYA_USER:-kakeya}"
group="${KAKEYA_GROUP:-$user}"
if [ -n "${KAKEYA_INIT:-}" ]; then
  init="$KAKEYA_INIT"
elif [ "$os" = Darwin ]; then
  init=launchd
elif command -v systemctl >/dev/null 2>&1; then
  init=systemd
else
  init=none
fi
case "$init" in systemd|launchd|none) ;; *) echo "install.sh: KAKEYA_INIT '$init' is not systemd, launchd or none" >&2; exit 64 ;; esac
if [ "$init" = systemd ] && [ "${statedir#/var/lib/}" = "$statedir" ]; then
  echo "install.sh: STATEDIR '$statedir' must be under /var/lib/ (systemd StateDirectory=)" >&2
  exit 64
fi

bindir="$prefix/bin"
sharedir="$prefix/share/kakeya"
unit="/etc/systemd/system/kakeya-runner.service"
plist="/Library/LaunchDaemons/com.kakeya.runner.plist"
is_root=0
[ "$(id -u)" -eq 0 ] && is_root=1
say() { echo "install: $*"; }

# Owner and mode of a path under DESTDIR (chown only as root and when the account exists).
own() {
  local owner="$1" mode="$2" path="$3"
  chmod "$mode" "$path"
  if [ "$is_root" -eq 1 ]; then
    local u="${owner%%:*}" g="${owner##*:}"
    if { [[ "$u" =~ ^[0-9]+$ ]] || getent passwd "$u" >/dev/null 2>&1; } &&
       { [[ "$g" =~ ^[0-9]+$ ]] || getent group "$g" >/dev/null 2>&1; }; then
      chown "$owner" "$path"
    else
      say "warning: account $owner does not exist here; $path left owned by $(id -un)"
    fi
  fi
}

# The unit and plist templates with this install's paths (@BINDIR@, @SYSCONFDIR@, @STATEDIR@,
# @STATEDIR_NAME@, @USER@, @GROUP@).
render() {
  sed -e "s|@BINDIR@|$bindir|g" -e "s|@SYSCONFDIR@|$sysconfdir|g" -e "s|@STATEDIR@|$statedir|g" \
      -e "s|@STATEDIR_NAME@|${statedir#/var/lib/}|g" -e "s|@USER@|$user|g" -e "s|@GROUP@|$group|g" "$1"
}

# The example config with this install's work_dir, catalog and config directory.
render_config() {
  sed -e "s|^work_dir: .*|work_dir: $statedir|" -e "s|^catalog_path: .*|catalog_path: $sharedir/presets.yaml|" \
      -e "s|^credentials_file: /etc/kakeya/|credentials_file: $sysconfdir/|" "$root/deploy/runner.example.yaml"
}

# Writes stdin to $1 only when the content differs (keeps mtimes stable: idempotent re-runs).
put() {
  local dest="$1" mode="$2" tmp
  tmp="$(mktemp)"
  cat >"$tmp"
  if [ -f "$dest" ] && cmp -s "$tmp" "$dest"; then
    rm -f "$tmp"
  else
    install -m "$mode" "$tmp" "$dest"
    rm -f "$tmp"
    say "wrote $dest"
  fi
  chmod "$mode" "$dest"
}

service_manager() {
  [ -z "$destdir" ] || return 0
  if [ "$init" = systemd ] && [ -d /run/systemd/system ]; then systemctl "$@" || true; fi
}

do_install() {
  for b in kakeya kakeya-runner kakeya-engine; do
    [ -x "$build/$b" ] || { echo "install.sh: $build/$b missing; build first (scripts/build.sh)" >&2; exit 1; }
  done
  if [ -z "$destdir" ] && [ "$is_root" -eq 1 ] && [ "$os" != Darwin ] && ! getent passwd "$user" >/dev/null; then
    useradd --system --user-group --home-dir "$statedir" --no-create-home --shell /usr/sbin/nologin "$user"
    say "created system account $user"
  fi
  install -d -m 0755 "$destdir$bindir" "$destdir$sharedir"
  for b in kakeya kakeya-runner kakeya-engine; do put "$destdir$bindir/$b" 0755 <"$build/$b"; done

  # The catalog: the runner reads this installed copy, never one from a request branch.
  local cat="$destdir$sharedir/presets.yaml" dist="$destdir$sharedir/presets.yaml.dist"
  if [ ! -f "$cat" ] || { [ -f "$dist" ] && cmp -s "$cat" "$dist"; }; then
    put "$cat" 0644 <"$root/manifests/presets.yaml"
  elif ! cmp -s "$cat" "$root/manifests/presets.yaml"; then
    say "kept the edited catalog $sharedir/presets.yaml; the shipped one is $sharedir/presets.yaml.dist"
  fi
  put "$dist" 0644 <"$root/manifests/presets.yaml"
  render_config | put "$destdir$sharedir/runner.example.yaml" 0644

  # Config: root-owned, readable by the runner's group only (it names the credentials file).
  install -d "$destdir$sysconfdir"
  own "root:$group" 0750 "$destdir$sysconfdir"
  if [ ! -f "$destdir$sysconfdir/runner.yaml" ]; then
    render_config | put "$destdir$sysconfdir/runner.yaml" 0640
    say "edit $sysconfdir/runner.yaml (remote_url, credentials_file, runner_id, labels, models)"
  fi
  own "root:$group" 0640 "$destdir$sysconfdir/runner.yaml"

  # work_dir: owned by the runner (jobs, spool, caches, state.json).
  for d in "" /jobs /spool /cache; do
    install -d "$destdir$statedir$d"
    own "$user:$group" 0750 "$destdir$statedir$d"
  done

  case "$init" in
    systemd)
      install -d -m 0755 "$destdir$(dirname "$unit")"
      render "$root/deploy/kakeya-runner.service" | put "$destdir$unit" 0644
      service_manager daemon-reload
      [ -n "$destdir" ] || say "then: systemctl enable --now kakeya-runner; kakeya-runner doctor -c $sysconfdir/runner.yaml"
      ;;
    launchd)
      install -d -m 0755 "$destdir$(dirname "$plist")"
      render "$root/deploy/com.kakeya.runner.plist" | put "$destdir$plist" 0644
      [ -n "$destdir" ] || say "then: launchctl bootstrap system $plist"
      ;;
    none) ;;
  esac
  say "installed (prefix $prefix, config $sysconfdir, work_dir $statedir, user $user)"
}

do_uninstall() {
  case "$init" in
    systemd)
      service_manager disable --now kakeya-runner
      rm -f "$destdir$unit"
      service_manager daemon-reload
      ;;
    launchd) rm -f "$destdir$plist" ;;
    none) ;;
  esac
  for b in kakeya kakeya-runner kakeya-engine; do rm -f "$destdir$bindir/$b"; done
  rm -f "$destdir$sharedir/presets.yaml.dist" "$destdir$sharedir/runner.example.yaml"
  if [ "$purge" -eq 1 ]; then
    rm -rf "$destdir$sharedir" "$destdir$sysconfdir" "$destdir$statedir"
    if [ -z "$destdir" ] && [ "$is_root" -eq 1 ] && [ "$os" != Darwin ] && getent passwd "$user" >/dev/null; then
      userdel "$user" && say "removed account $user"
    fi
    say "purged config, catalog, work_dir and account"
  else
    rmdir "$destdir$sharedir" 2>/dev/null || true
    say "kept $sysconfdir, $sharedir/presets.yaml and $statedir (spool may hold unpublished results); --purge removes them"
  fi
  say "uninstalled"
}

if [ "$action" = install ]; then do_install; else do_uninstall; fi
