#!/usr/bin/env bash
# System packages the sandbox and the SWE-bench envs need. Installs them when running as root on Debian;
# otherwise says what to run. Never changes the default python3.
set -u
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v patch >/dev/null 2>&1 || missing+=(patch)
# the sandbox's tarpit routes (connect-timeout tests time out as on a networked host)
PATH="$PATH:/usr/sbin:/sbin" command -v ip >/dev/null 2>&1 || missing+=(iproute2)
# compiled projects (astropy, scikit-learn, matplotlib): ccache makes a nearby commit's rebuild cheap;
# matplotlib takes the system's qhull, and FreeType 2.6.1 from a freetype/freetype mirror (the system's without one)
command -v ccache >/dev/null 2>&1 || missing+=(ccache)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
[ -e /usr/include/freetype2/ft2build.h ] || missing+=(libfreetype6-dev)
[ -e /usr/include/libqhull_r/libqhull_r.h ] || missing+=(libqhull-dev)
command -v gs >/dev/null 2>&1 || missing+=(ghostscript)  # matplotlib's pdf and eps image comparisons
command -v inkscape >/dev/null 2>&1 || missing+=(inkscape)  # its svg image comparisons
for t in autoconf automake libtoolize; do command -v $t >/dev/null 2>&1 || { missing+=(autoconf automake libtool); break; }; done  # FreeType 2.6.1 from its release tag (autogen.sh)
# matplotlib's specs apt-install TeX: its pgf and usetex tests (PASS_TO_PASS of some tasks) skip without it
tex=()
for t in xelatex lualatex dvipng kpsewhich; do command -v $t >/dev/null 2>&1 || { tex=(texlive texlive-latex-extra texlive-fonts-recommended texlive-xetex texlive-luatex cm-super dvipng); break; }; done
command -v dot >/dev/null 2>&1 || missing+=(graphviz)  # sphinx 7's spec apt-installs it (inheritance diagrams)
# django's test requirements build pylibmc (libmemcached) and read GeoIP databases (libmaxminddb)
[ -e /usr/include/libmemcached/memcached.h ] || missing+=(libmemcached-dev)
[ -n "$(ls /usr/include/maxminddb.h /usr/include/*/maxminddb.h 2>/dev/null)" ] || missing+=(libmaxminddb-dev)
# xarray's cfgrib needs the ecCodes C library, which conda's environment.yml brings and PyPI does not
ls /usr/lib/*/libeccodes.so.0 >/dev/null 2>&1 || missing+=(libeccodes0)
# django's spec runs its tests under en_US.UTF-8, which its image generates; the sandbox reads the host's locales
has_locale() { locale -a 2>/dev/null | grep -qix 'en_US.utf8'; }
need_locale=0
has_locale || { need_locale=1; [ -e /etc/locale.gen ] || missing+=(locales); }
# Python 3.9 (sympy, sphinx, pytest, astropy specs) when neither pyenv nor the system has one: Debian bullseye's
has_py39() {
  for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.9.*/bin/python3.9 /usr/bin/python3.9 /usr/local/bin/python3.9; do
    [ -x "$p" ] && "$p" -c 'import sys' >/dev/null 2>&1 && return 0
  done
  return 1
}
need_py39=0
has_py39 || need_py39=1
gen_locale() {
  sed -i 's/^# *en_US.UTF-8 UTF-8/en_US.UTF-8 UTF-8/' /etc/locale.gen
  grep -q '^en_US.UTF-8 UTF-8' /etc/locale.gen || echo 'en_US.UTF-8 UTF-8' >>/etc/locale.gen
  locale-gen >/dev/null || echo "sysdeps: locale-gen could not generate en_US.UTF-8; django's tests run without it." >&2
}
[ ${#missing[@]} -eq 0 ] && [ ${#tex[@]} -eq 0 ] && [ $need_py39 -eq 0 ] && [ $need_locale -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  if [ $need_py39 -eq 1 ] && grep -q bookworm /etc/os-release 2>/dev/null; then
    # bullseye beside bookworm, pinned low: only packages asked for by name come from it
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bullseye\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      >/etc/apt/sources.list.d/swecl-bullseye.sources
    printf 'Package: *\nPin: release n=bullseye\nPin-Priority: 100\n' >/etc/apt/preferences.d/swecl-bullseye
    missing+=(python3.9 python3.9-dev)
  fi
  [ ${#missing[@]} -gt 0 ] || [ ${#tex[@]} -gt 0 ] && { apt-get update -qq >/dev/null || true; }  # once, for both installs
  if [ ${#missing[@]} -gt 0 ]; then
    echo "sysdeps: installing ${missing[*]} with apt-get (why each: the README's System packages)"
    (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null \
      || { echo "sysdeps: apt-get could not install ${missing[*]}; install them by hand." >&2; exit 1; }
  fi
  if [ ${#tex[@]} -gt 0 ]; then  # without recommends: 132 MB, not TeX Live's documentation and every font
    echo "sysdeps: installing ${tex[*]} with apt-get (no recommends)"
    (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${tex[@]}") >/dev/null \
      || echo "sysdeps: apt-get could not install TeX (${tex[*]}); matplotlib's pgf and usetex tests will skip, and tasks that expect them are labelled system-package." >&2
  fi
  [ $need_locale -eq 1 ] && echo "sysdeps: generating the en_US.UTF-8 locale" && gen_locale
else
  [ ${#tex[@]} -gt 0 ] && echo "sysdeps: no TeX (matplotlib's pgf and usetex tests skip); as root: apt-get install --no-install-recommends ${tex[*]}." >&2
  [ ${#missing[@]} -gt 0 ] && echo "sysdeps: missing ${missing[*]}; install them (e.g. 'sudo apt-get install ${missing[*]}') for the local sandbox and compiled projects; other features still work." >&2
  [ $need_locale -eq 1 ] && echo "sysdeps: no en_US.UTF-8 locale (django's tests run under it); as root: apt-get install locales, uncomment en_US.UTF-8 in /etc/locale.gen, run locale-gen." >&2
  [ $need_py39 -eq 1 ] && echo "sysdeps: no Python 3.9 (the spec Python of sympy, sphinx, pytest and astropy); install one, e.g. 'pyenv install 3.9' or Debian bullseye's python3.9, else those tasks run on the closest Python and say so." >&2
fi
exit 0
