#!/bin/sh
# One-shot job (temporalio/admin-tools image), after the server is healthy: the namespace and
# policyforge's custom search attributes (the embedded dev server gets the same at start).
# They are defined in workflows/search.py; tests/workflows/test_search.py keeps this list in step.
set -eu
: "${TEMPORAL_ADDRESS:=temporal:7233}" "${TEMPORAL_NAMESPACE:=default}"
export TEMPORAL_ADDRESS
temporal operator namespace describe -n "$TEMPORAL_NAMESPACE" >/dev/null 2>&1 \
  || temporal operator namespace create -n "$TEMPORAL_NAMESPACE" --retention 30d
for attr in PolicyforgeStage=Keyword PolicyforgeEnv=Keyword PolicyforgeIteration=Int \
            PolicyforgeBestScore=Double PolicyforgePassed=Bool; do
  temporal operator search-attribute create -n "$TEMPORAL_NAMESPACE" \
    --name "${attr%%=*}" --type "${attr#*=}" 2>/dev/null || true  # exists already
done
echo "namespace $TEMPORAL_NAMESPACE and search attributes ready"
