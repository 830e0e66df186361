#!/bin/sh
# PolicyDesk, Postgres (pgvector) and PgBouncer in one podman pod, from the one image:
#   deploy/pod.sh up     start the pod (database container first, then the app when the pooler answers)
#   deploy/pod.sh down   stop and remove the pod (the data volume stays)
#   deploy/pod.sh admin policydesk users add NAME --role rep    run an admin command against it
#
# The database container runs `policydesk stack --no-serve`: the embedded Postgres on the volume,
# PgBouncer in transaction mode on the pod's 127.0.0.1:6432, migrations once. The app container
# runs the image's default `policydesk serve` through that pooler; its HEALTHCHECK probes /readyz.
#
# ENV_FILE (default deploy/policydesk.env, mode 600) holds the secrets, one NAME=value a line:
#   POLICYDESK_STACK_OWNER_PASSWORD   the owner login at PgBouncer (letters and digits)
#   POLICYDESK_APP_DB_PASSWORD        the app login (requests run as it, bound by row-level security)
#   POLICYDESK_SECRET_KEY             signs session cookies (32+ random bytes)
#   POLICYDESK_METRICS_TOKEN          the bearer token /metrics asks for
# and any other POLICYDESK_* setting (docs/deploy.md). Behind a TLS proxy add
# POLICYDESK_ENVIRONMENT=production and POLICYDESK_FORWARDED_ALLOW_IPS=<the proxy's address>.
#
# PODMAN_ARGS are added to every `podman run` (e.g. a sandbox's --runtime/--ulimit flags), and
# POD_ARGS to `podman pod create` (e.g. --network host where the pod network is unavailable).
set -eu
IMAGE=${IMAGE:-localhost/policydesk:latest}
POD=${POD:-policydesk}
PORT=${PORT:-8000}
VOLUME=${VOLUME:-policydesk-data}
ENV_FILE=${ENV_FILE:-deploy/policydesk.env}
PODMAN_ARGS=${PODMAN_ARGS:-}
POD_ARGS=${POD_ARGS:-}

owner_password() {
  sed -n 's/^POLICYDESK_STACK_OWNER_PASSWORD=//p' "$ENV_FILE" | tail -n 1
}

case "${1:-}" in
up)
  [ -r "$ENV_FILE" ] || { echo "error: $ENV_FILE not found (see the top of $0)" >&2; exit 2; }
  pw=$(owner_password)
  case "$pw" in
    "" ) echo "error: POLICYDESK_STACK_OWNER_PASSWORD is not set in $ENV_FILE" >&2; exit 2 ;;
    *[!A-Za-z0-9_-]* ) echo "error: POLICYDESK_STACK_OWNER_PASSWORD: use letters, digits, - and _ only" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2086
  podman pod create --name "$POD" -p "$PORT:8000" $POD_ARGS >/dev/null
  podman volume exists "$VOLUME" || podman volume create "$VOLUME" >/dev/null
  # shellcheck disable=SC2086
  podman run -d $PODMAN_ARGS --pod "$POD" --name "$POD-database" --env-file "$ENV_FILE" \
    -v "$VOLUME:/var/lib/policydesk" --health-cmd none \
    "$IMAGE" policydesk stack --no-serve --pooler-host 127.0.0.1 --pooler-port 6432 >/dev/null
  i=0
  until podman logs "$POD-database" 2>&1 | grep -q "^database ready"; do
    i=$((i + 1))
    if [ "$i" -gt 180 ] || [ "$(podman inspect -f '{{.State.Running}}' "$POD-database")" != "true" ]; then
      echo "error: the database container did not become ready:" >&2
      podman logs --tail 30 "$POD-database" >&2
      exit 3
    fi
    sleep 1
  done
  # shellcheck disable=SC2086
  podman run -d $PODMAN_ARGS --pod "$POD" --name "$POD-app" --env-file "$ENV_FILE" \
    -e "DATABASE_URL=postgresql://postgres:$pw@127.0.0.1:6432/policydesk" \
    -e POLICYDESK_DB_PREPARED_STATEMENTS=false "$IMAGE" >/dev/null
  echo "pod $POD: PolicyDesk on http://127.0.0.1:$PORT once /readyz is 200 (podman healthcheck run $POD-app)"
  ;;
down)
  podman pod stop -t 60 "$POD" >/dev/null 2>&1 || true
  podman pod rm -f "$POD" >/dev/null
  echo "pod $POD removed; volume $VOLUME kept"
  ;;
admin)
  shift
  podman exec "$POD-app" "$@"
  ;;
*)
  sed -n '2,5p' "$0" | sed 's/^# //'
  exit 2
  ;;
esac
