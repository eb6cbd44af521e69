#!/bin/sh
# One-shot namespace setup of docker-compose.yml (`temporal-setup` service, temporalio/admin-tools
# image), as an operator would do it with the temporal CLI: wait for the frontend, create the
# namespace with a retention that outlives task results (src/temporal/namespace-retention.ts: result
# retention + 1 day; the worker refuses to start otherwise), and register the approval workflow's
# search attributes (docs/OPERATIONS.md §Search attributes). Safe to run again.
set -eu
: "${TEMPORAL_ADDRESS:?}" "${NAMESPACE:?}" "${RETENTION:?}"
until temporal operator cluster health >/dev/null 2>&1; do
  echo "waiting for Temporal at $TEMPORAL_ADDRESS"
  sleep 2
done
if temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1; then
  temporal operator namespace update --namespace "$NAMESPACE" --retention "$RETENTION"
else
  temporal operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION"
fi
# a new namespace reaches the frontend's namespace cache some seconds later (on a multi-service
# cluster; the dev server sees it at once): wait until its search attributes can be listed
tries=0
until temporal operator search-attribute list --namespace "$NAMESPACE" >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -ge 60 ]; then
    echo "namespace $NAMESPACE not visible after 120 s" >&2
    exit 1
  fi
  sleep 2
done
# one command per attribute: the CLI registers only the first of several --name given with one --type
for name in CountersignTool CountersignApproverGroup CountersignStatus CountersignDisposition CountersignOwner; do
  if ! temporal operator search-attribute list --namespace "$NAMESPACE" | grep -qw "$name"; then
    temporal operator search-attribute create --namespace "$NAMESPACE" --name "$name" --type Keyword
  fi
done
echo "namespace $NAMESPACE ready"
