# Sourced by the scripts that drive headless Chromium (interop/browser.sh,
# scripts/check-demo-report.sh). `find_chromium LABEL` sets $chromium to $CHROMIUM, or to the
# chromium on PATH, installing Debian's package first when it is missing (as root); it calls
# the caller's `give_up` when it cannot. LABEL prefixes its progress lines.
find_chromium() {
  local label=$1
  chromium="${CHROMIUM:-}"
  [ -n "$chromium" ] && return 0
  if ! command -v chromium >/dev/null; then
    [ "$(id -u)" -eq 0 ] || give_up "chromium is not installed and only root can apt-get install it"
    echo "$label: installing chromium (apt-get install chromium)"
    local install_log
    install_log=$(mktemp)
    if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } \
      >"$install_log" 2>&1; then
      tail -n 20 "$install_log" | sed 's/^/note: apt-get: /'
      rm -f "$install_log"
      give_up "apt-get install chromium"
    fi
    rm -f "$install_log"
  fi
  chromium=$(command -v chromium)
}
