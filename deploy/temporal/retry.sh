# Sourced by the set-up jobs (setup.sh, init.sh), which define fail() with their own name.
# SETUP_ATTEMPTS and SETUP_RETRY_DELAY_S bound the retries.

# The first non-blank line of $1 (the tools put the error there, details below it).
first_line() { printf '%s\n' "$1" | awk 'NF { print; exit }'; }

# retry WHAT COMMAND...: run COMMAND until it succeeds, at most SETUP_ATTEMPTS times, then fail
# naming WHAT with the first line of COMMAND's last error; its output is left in $out.
retry() {
  what=$1
  shift
  attempt=1
  until out=$("$@" 2>&1); do
    [ "$attempt" -lt "$SETUP_ATTEMPTS" ] \
      || fail "$what failed after $attempt attempts: $(first_line "$out")"
    attempt=$((attempt + 1))
    sleep "$SETUP_RETRY_DELAY_S"
  done
}
