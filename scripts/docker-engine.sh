#!/usr/bin/env bash
# A Docker engine for the docker sandbox when none is reachable (tests, a bare Debian host).
#   scripts/docker-engine.sh start   installs docker.io + debootstrap (root, apt), starts dockerd, waits for the socket
#   scripts/docker-engine.sh stop    stops the dockerd this script started (its recorded pid), nothing else
#   scripts/docker-engine.sh status  exit 0 when an engine answers
# An engine that already answers is never touched: start says so and returns 0, stop leaves it alone.
# dockerd runs with --iptables=false --bridge=none: no host firewall changes, no bridge (the sandbox runs containers
# with --network none). Storage: overlay2 when an overlay mount works in /var/lib/docker (a container then starts in
# about a second), else vfs, which works on any filesystem but copies an image's whole tree at every container start.
# SWECL_DOCKER_STORAGE=vfs|overlay2 chooses.
set -u
SOCK=/var/run/docker.sock
STATE_DIR=${SWECL_DOCKER_STATE:-/var/run/swecl-docker}
PIDFILE=$STATE_DIR/dockerd.pid
LOG=$STATE_DIR/dockerd.log
WAIT_S=${SWECL_DOCKER_WAIT:-60}

answers() { [ -S "$SOCK" ] && command -v docker >/dev/null 2>&1 && timeout 10 docker -H "unix://$SOCK" version >/dev/null 2>&1; }

install_pkgs() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "docker-engine: missing ${missing[*]}; install them as root (apt-get install ${missing[*]})." >&2
    return 1
  fi
  echo "docker-engine: installing ${missing[*]} with apt-get"
  # --no-install-recommends: docker.io recommends apparmor, cgroupfs-mount, git, xz-utils... none needed here
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}") >/dev/null \
    || { echo "docker-engine: apt-get could not install ${missing[*]}." >&2; return 1; }
}

storage_driver() {
  [ -n "${SWECL_DOCKER_STORAGE:-}" ] && { echo "$SWECL_DOCKER_STORAGE"; return; }
  mkdir -p /var/lib/docker
  local d
  d=$(mktemp -d /var/lib/docker/.overlay-probe.XXXXXX) || { echo vfs; return; }
  mkdir -p "$d/l" "$d/u" "$d/w" "$d/m"
  if mount -t overlay overlay -o "lowerdir=$d/l,upperdir=$d/u,workdir=$d/w" "$d/m" 2>/dev/null; then
    umount "$d/m"; echo overlay2
  else
    echo vfs
  fi
  rm -rf "$d"
}

start() {
  if answers; then echo "docker-engine: an engine already answers on $SOCK; leaving it alone"; return 0; fi
  if [ -S "$SOCK" ] && [ ! -f "$PIDFILE" ]; then
    echo "docker-engine: $SOCK exists but does not answer, and this script did not start it; not touching it." >&2
    return 1
  fi
  install_pkgs || return 1
  if [ "$(id -u)" != "0" ]; then echo "docker-engine: dockerd needs root; run this as root." >&2; return 1; fi
  mkdir -p "$STATE_DIR"
  local driver
  driver=$(storage_driver)
  PATH="$PATH:/usr/sbin:/sbin" nohup setsid dockerd --iptables=false --bridge=none --storage-driver="$driver" \
    --host "unix://$SOCK" >"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 "$WAIT_S"); do
    if answers; then echo "docker-engine: dockerd (pid $(cat "$PIDFILE"), storage $driver) answers on $SOCK"; return 0; fi
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break
    sleep 1
  done
  echo "docker-engine: dockerd did not answer within ${WAIT_S}s; its log ($LOG) ends:" >&2
  tail -5 "$LOG" >&2
  stop >/dev/null
  return 1
}

stop() {
  [ -f "$PIDFILE" ] || { echo "docker-engine: this script started no engine; nothing to stop"; return 0; }
  local pid
  pid=$(cat "$PIDFILE")
  # only the recorded pid, and only while it is still a dockerd (a pid can be reused after a reboot)
  if kill -0 "$pid" 2>/dev/null && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = dockerd ]; then
    kill -TERM "$pid"
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "docker-engine: stopped dockerd (pid $pid)"
  fi
  rm -f "$PIDFILE"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) answers && echo "docker-engine: an engine answers on $SOCK" || { echo "docker-engine: no engine answers on $SOCK"; exit 1; } ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
