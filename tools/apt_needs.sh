# Sourced by the setup scripts (tools/setup_arm.sh, setup_riscv.sh, setup_wasm.sh): collect the
# Debian packages of what is missing, then install them in one apt-get call.
#   need PROGRAM_OR_FILE PACKAGE...   PACKAGE... is needed unless the program is on PATH (or,
#                                     for an absolute path, the file exists)
#   install_needed NAME               apt-get install what need collected (nothing when all is
#                                     there), saying so as NAME
apt_packages=()
need() {
  local probe="$1"
  shift
  if [[ "$probe" == /* ]]; then
    [ -e "$probe" ] && return 0
  else
    command -v "$probe" >/dev/null && return 0
  fi
  apt_packages+=("$@")
}
install_needed() {
  ((${#apt_packages[@]})) || return 0
  # shellcheck disable=SC2207
  apt_packages=($(printf '%s\n' "${apt_packages[@]}" | sort -u))
  echo "$1: installing ${apt_packages[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${apt_packages[@]}"
}
