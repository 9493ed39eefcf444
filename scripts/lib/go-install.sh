# Shared by the scripts that install a Go program at a pinned version (nats-server.sh,
# toxiproxy.sh): finding or downloading a Go toolchain, and `go install` into a private cache
# directory under flock. Sourced, never run. The caller sets, before `go_tool_setup`:
#
#   tool         the script's name in messages (nats-server.sh)
#   cache        the directory that holds everything (created here)
#   go_min_minor the oldest Go 1.N that builds the program
#   go_download  the Go release to download when no such Go is found
#
# and then calls `go_tool_install PACKAGE@VERSION BINARY DEST...`: `go install` each package,
# moving the binary `go install` named BINARY to DEST (so a DEST only ever appears complete).

give_up() {
  echo "$tool: error: $*" >&2
  exit 1
}
note() { echo "$tool: $*" >&2; }

# Creates $cache, points every go command at it and takes the install lock (fd 9).
go_tool_setup() {
  mkdir -p "$cache/bin" || give_up "cannot create $cache"
  # Every go command below, version checks included, keeps its configuration and telemetry
  # counters (os.UserConfigDir) in the cache directory and ignores the user's go env file.
  export XDG_CONFIG_HOME=$cache/config GOENV=off GOTOOLCHAIN=local
  command -v flock >/dev/null || give_up "flock (util-linux) is needed to serialise installs"
  exec 9>"$cache/lock" || give_up "cannot open $cache/lock"
  flock -w 1800 9 || give_up "timed out after 30 min waiting for another install ($cache/lock)"
}

# Prints the minor version of the Go at $1 when it is 1.N.x, nothing otherwise.
go_minor() {
  local v
  v=$(GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null) || return 0
  case $v in go1.*) v=${v#go1.}; echo "${v%%[!0-9]*}" ;; esac
}

download() { # url file
  if command -v curl >/dev/null; then
    curl -fsSL --retry 3 --max-time 900 -o "$2" "$1"
  elif command -v wget >/dev/null; then
    wget -q -O "$2" "$1"
  else
    give_up "neither curl nor wget is installed to download $1"
  fi
}

fetch() { # url: prints the body
  if command -v curl >/dev/null; then curl -fsSL --retry 3 --max-time 60 "$1"; else wget -q -O - "$1"; fi
}

# Downloads Go $go_download into $cache/go-$go_download/go; prints the path of its `go`.
download_go() {
  local arch root tarball url want got tmp
  case $(uname -m) in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) give_up "no Go found and no Go download for machine $(uname -m)" ;;
  esac
  root=$cache/go-$go_download
  if [ -x "$root/go/bin/go" ]; then
    echo "$root/go/bin/go"
    return
  fi
  rm -rf "$root" && mkdir -p "$root"
  tmp=$(mktemp -d "$cache/download.XXXXXX")
  trap "rm -rf '$tmp'" EXIT # download_go runs in a subshell: this fires when it returns
  tarball=go$go_download.linux-$arch.tar.gz
  url=https://dl.google.com/go/$tarball
  note "downloading $url"
  if want=$(fetch "$url.sha256" 2>/dev/null) && [[ $want =~ ^[0-9a-f]{64}$ ]] \
    && download "$url" "$tmp/$tarball"; then
    got=$(sha256sum "$tmp/$tarball" | cut -d' ' -f1)
    [ "$got" = "$want" ] || give_up "$tarball: sha256 $got, expected $want (from $url.sha256)"
    tar -C "$root" -xzf "$tmp/$tarball" || give_up "cannot unpack $tarball"
  else
    download_go_module "$arch" "$root" "$tmp"
  fi
  rm -rf "$tmp"
  [ -x "$root/go/bin/go" ] || give_up "the downloaded Go has no bin/go"
  echo "$root/go/bin/go"
}

# The fallback: the release packaged as the module golang.org/toolchain, as the go command
# itself downloads it (GOTOOLCHAIN). Its h1: hash is a SHA-256 over the sorted list of
# "<sha256>  <path>" lines of the files in the zip, which is what sha256sum prints.
download_go_module() { # arch root tmp
  local arch=$1 root=$2 tmp=$3 proxy mod want got
  command -v unzip >/dev/null || give_up "unzip is needed to unpack the Go toolchain module"
  proxy=${GOPROXY:-https://proxy.golang.org}
  proxy=${proxy%%[,|]*}
  case $proxy in http*) ;; *) proxy=https://proxy.golang.org ;; esac
  mod=v0.0.1-go$go_download.linux-$arch
  note "dl.google.com did not answer; downloading golang.org/toolchain@$mod from $proxy"
  want=$(fetch "$proxy/sumdb/sum.golang.org/lookup/golang.org/toolchain@$mod" \
    | awk -v m="$mod" '$1 == "golang.org/toolchain" && $2 == m { print $3 }') \
    || give_up "cannot look up golang.org/toolchain@$mod in the checksum database"
  [ -n "$want" ] || give_up "the checksum database has no hash for golang.org/toolchain@$mod"
  download "$proxy/golang.org/toolchain/@v/$mod.zip" "$tmp/toolchain.zip" \
    || give_up "cannot download Go: neither https://dl.google.com/go/ nor $proxy answered"
  mkdir "$tmp/x"
  unzip -q "$tmp/toolchain.zip" -d "$tmp/x" || give_up "cannot unpack golang.org/toolchain@$mod"
  got=h1:$(cd "$tmp/x" && find . -type f | sed 's|^\./||' | LC_ALL=C sort \
    | xargs -d '\n' sha256sum | sha256sum | cut -d' ' -f1 | xxd -r -p | base64)
  [ "$got" = "$want" ] || give_up "golang.org/toolchain@$mod: hash $got, expected $want"
  mv "$tmp/x/golang.org/toolchain@$mod" "$root/go"
  chmod +x "$root/go/bin/"* "$root/go/pkg/tool/"*/* 2>/dev/null || true
}

# Sets go_bin: $TICKWIRE_GO when set (a path to `go`, or `download`), else `go` on PATH, else
# /usr/local/go/bin/go, if either is Go 1.$go_min_minor or newer; else a download.
find_go() {
  local candidate minor candidates
  go_bin=
  case ${TICKWIRE_GO:-} in
    '') candidates=("$(command -v go || true)" /usr/local/go/bin/go) ;;
    download) candidates=() ;;
    *) candidates=("$TICKWIRE_GO") ;;
  esac
  for candidate in ${candidates[@]+"${candidates[@]}"}; do
    if [ -z "$candidate" ] || [ ! -x "$candidate" ]; then
      [ -z "${TICKWIRE_GO:-}" ] || give_up "TICKWIRE_GO=$TICKWIRE_GO is not an executable"
      continue
    fi
    minor=$(go_minor "$candidate")
    if [ -n "$minor" ] && [ "$minor" -ge "$go_min_minor" ]; then
      go_bin=$candidate
      break
    fi
    [ -z "${TICKWIRE_GO:-}" ] || give_up "TICKWIRE_GO=$TICKWIRE_GO is not Go 1.$go_min_minor or newer"
    note "skipping $candidate: not Go 1.$go_min_minor or newer"
  done
  [ -n "$go_bin" ] || go_bin=$(download_go)
}

# go_tool_install PACKAGE@VERSION BINARY DEST [PACKAGE@VERSION BINARY DEST ...]
go_tool_install() {
  local log=$cache/install.log package binary dest
  find_go
  note "installing $1 with $go_bin ($(GOTOOLCHAIN=local "$go_bin" env GOVERSION))"
  while [ $# -ge 3 ]; do
    package=$1 binary=$2 dest=$3
    shift 3
    # GOBIN is a staging directory so that DEST only ever appears complete.
    rm -rf "$cache/staging"
    if ! env GOBIN="$cache/staging" GOPATH="$cache/gopath" GOMODCACHE="$cache/gopath/pkg/mod" \
      GOCACHE="$cache/gocache" GOENV=off XDG_CONFIG_HOME="$cache/config" GOTOOLCHAIN=local \
      GOFLAGS="-modcacherw -buildvcs=false" CGO_ENABLED=0 \
      "$go_bin" install "$package" >"$log" 2>&1; then
      tail -n 20 "$log" | sed "s/^/$tool: go: /" >&2
      give_up "go install $package failed (log: $log)"
    fi
    mv -f "$cache/staging/$binary" "$dest"
    rmdir "$cache/staging"
  done
}
