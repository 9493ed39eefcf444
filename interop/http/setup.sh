#!/usr/bin/env bash
# Installs what the HTTP conformance run needs, idempotently, on a clean machine:
#   - target/http-interop-venv: a private Python venv with httpbin served by gunicorn, every
#     package pinned by the constraints list below (nothing is installed into the system Python);
#   - nginx, from Debian's package, with apt-get only when `nginx` is not on PATH. Debian's
#     postinst does not start the system service in a container whose policy-rc.d forbids it,
#     and interop/http/servers.sh never uses /etc/nginx: it runs nginx on a generated config.
# A venv whose stamp matches the constraints is left alone.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/target/http-interop-venv"
python="$venv/bin/python"
stamp="$venv/tickwire-constraints.txt"

fail() { echo "interop/http/setup.sh: FAILED: $*" >&2; exit 1; }

# The peers under test and everything they pull in, pinned (checked with CPython 3.11).
# httpbin 0.10.x runs on Flask 3 / Werkzeug 3 (0.7.0 from 2018 does not); flasgger is optional
# in 0.10 and left out (only the Swagger page at / needs it). gunicorn's gthread worker keeps
# connections alive. Bump deliberately and re-run interop/http/run.sh.
constraints=$(cat <<'PINS'
httpbin==0.10.4
gunicorn==27.0.1
Flask==3.1.3
Werkzeug==3.1.9
Jinja2==3.1.6
MarkupSafe==3.0.4
itsdangerous==2.2.0
click==8.5.1
blinker==1.9.0
brotlicffi==1.2.1.0
cffi==2.1.1
pycparser==3.12
decorator==5.3.1
greenlet==2.0.2
six==1.17.0
PINS
)

# nginx: Debian's package, only when missing.
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  [ "$(id -u)" -eq 0 ] || fail "nginx is not installed and only root can apt-get install it"
  echo "interop/http/setup.sh: installing nginx (apt-get install nginx)"
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx; } >/dev/null \
    || fail "apt-get install nginx"
fi

if [ -x "$python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$constraints" ] \
  && "$python" -c "import httpbin, gunicorn" 2>/dev/null; then
  exit 0
fi

command -v python3 >/dev/null || fail "python3 not found on PATH"
mkdir -p "$root/target"
if [ ! -x "$python" ]; then
  python3 -m venv "$venv" || fail "python3 -m venv $venv (on Debian: apt-get install python3-venv)"
fi
rm -f "$stamp"
printf '%s\n' "$constraints" > "$venv/constraints.txt"
"$python" -m pip install --quiet --disable-pip-version-check \
  -c "$venv/constraints.txt" httpbin gunicorn \
  || fail "pip install httpbin gunicorn (constraints: $venv/constraints.txt) into $venv"
"$python" - <<'PY' || fail "httpbin / gunicorn installed but do not import at the pinned versions"
import logging
logging.disable(logging.WARNING)  # httpbin warns that the optional flasgger is absent
import gunicorn, httpbin.core
from importlib.metadata import version
print(f"interop/http/setup.sh: httpbin {version('httpbin')}, gunicorn {gunicorn.__version__}, "
      f"Flask {version('flask')}, Werkzeug {version('werkzeug')}")
PY
printf '%s' "$constraints" > "$stamp"
