#!/usr/bin/env bash
# System packages the sandbox needs. Installs them when running as root; otherwise says what to run.
set -u
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v patch >/dev/null 2>&1 || missing+=(patch)
# the sandbox's tarpit routes (connect-timeout tests time out as on a networked host)
PATH="$PATH:/usr/sbin:/sbin" command -v ip >/dev/null 2>&1 || missing+=(iproute2)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "sysdeps: installing ${missing[*]} with apt-get"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null \
    || { echo "sysdeps: apt-get could not install ${missing[*]}; install them by hand." >&2; exit 1; }
else
  echo "sysdeps: missing ${missing[*]}; install them (e.g. 'sudo apt-get install ${missing[*]}') for the local sandbox; other features still work." >&2
fi
