#!/bin/sh
# One-shot job (temporalio/admin-tools image) once the server is up: policyforge's namespace and
# custom search attributes (the embedded dev server gets the same at start). Idempotent: safe on
# every `docker compose up`, and against Temporal Cloud or another cluster.
# The attributes are defined in workflows/search.py; tests/workflows/test_search.py keeps this
# list in step, and tests/deploy/test_temporal_jobs.py runs this script against a real server.
#
# Every step is retried (SETUP_ATTEMPTS times, SETUP_RETRY_DELAY_S seconds apart), then what it
# made is read back; on failure the job exits 1 with one line saying which step failed and why.
set -eu
: "${TEMPORAL_ADDRESS:=temporal:7233}" "${TEMPORAL_NAMESPACE:=default}"
: "${TEMPORAL_RETENTION:=30d}" "${SETUP_ATTEMPTS:=30}" "${SETUP_RETRY_DELAY_S:=2}"
export TEMPORAL_ADDRESS
NS=$TEMPORAL_NAMESPACE

fail() {
  echo "temporal-init: $*" >&2
  exit 1
}

. "$(dirname "$0")/retry.sh"  # first_line, retry

ensure_namespace() {
  temporal operator namespace describe -n "$NS" >/dev/null 2>&1 \
    || temporal operator namespace create -n "$NS" --retention "$TEMPORAL_RETENTION"
}

# The type attribute $1 has in the listing $2 ("" if it is not there).
type_in() { printf '%s\n' "$2" | awk -v name="$1" '$1 == name { print $2 }'; }

# Every attribute in $wanted is in the namespace with its type; else says which is not.
check_attributes() {
  listing=$(temporal operator search-attribute list -n "$NS" 2>&1) || {
    echo "$listing"
    return 1
  }
  for want in $wanted; do
    have=$(type_in "${want%%=*}" "$listing")
    [ "$have" = "${want#*=}" ] || {
      echo "${want%%=*} is ${have:-missing}, expected ${want#*=}"
      return 1
    }
  done
}

retry "health check of the Temporal server at $TEMPORAL_ADDRESS" temporal operator cluster health
retry "creating namespace $NS" ensure_namespace
retry "reading back namespace $NS" temporal operator namespace describe -n "$NS"

retry "listing the search attributes of namespace $NS" \
  temporal operator search-attribute list -n "$NS"
existing=$out
wanted=""
for attr in PolicyforgeStage=Keyword PolicyforgeEnv=Keyword PolicyforgeIteration=Int \
            PolicyforgeBestScore=Double PolicyforgePassed=Bool PolicyforgeModel=Keyword; do
  wanted="$wanted $attr"
  have=$(type_in "${attr%%=*}" "$existing")
  if [ -z "$have" ]; then
    retry "creating search attribute ${attr%%=*}" temporal operator search-attribute create \
      -n "$NS" --name "${attr%%=*}" --type "${attr#*=}"
  elif [ "$have" != "${attr#*=}" ]; then
    fail "search attribute ${attr%%=*} exists in namespace $NS as $have; policyforge needs" \
      "${attr#*=} (remove it or use another namespace)"
  fi
done
# New attributes reach the listing once the server's caches refresh: retried, like the rest.
retry "checking the search attributes of namespace $NS" check_attributes

echo "temporal-init: namespace $NS and its search attributes ready at $TEMPORAL_ADDRESS"
