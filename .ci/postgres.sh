# Sourced by .ci/run: starts a throw-away PostgreSQL server for the tests
# of session/postgres and exports its URL as REIN_TEST_POSTGRES. The server
# lives in a temporary directory, listens on 127.0.0.1 only, runs with
# fsync off (its data is thrown away), and is stopped when the shell exits.
#
# initdb refuses to run as root, so as root the server runs as the
# "postgres" system user (created if missing). A REIN_TEST_POSTGRES set
# before names a server to use instead.

start_postgres() {
  if [ -n "${REIN_TEST_POSTGRES:-}" ]; then
    echo "PostgreSQL from REIN_TEST_POSTGRES"
    return 0
  fi
  local bin=""
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/pg_ctl" ] && bin="$d"
  done
  if [ -z "$bin" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    for d in /usr/lib/postgresql/*/bin; do
      [ -x "$d/pg_ctl" ] && bin="$d"
    done
  fi
  if [ -z "$bin" ]; then
    echo "PostgreSQL not found and no apt-get: the session/postgres tests will skip"
    return 0
  fi

  local as=()
  if [ "$(id -u)" = 0 ]; then
    id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    as=(runuser -u postgres --)
  fi
  PG_DIR=$(mktemp -d /tmp/rein-pg.XXXXXX)
  [ ${#as[@]} -gt 0 ] && chown postgres "$PG_DIR"
  "${as[@]}" "$bin/initdb" -D "$PG_DIR/data" -U rein --auth=trust -E UTF8 --no-sync >/dev/null

  # A port nobody listens on; pg_ctl fails if another process takes it
  # first, and the loop tries another.
  local port
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
    if "${as[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -t 30 start \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $PG_DIR -c fsync=off -c full_page_writes=off -c max_connections=300" >/dev/null; then
      PG_BIN="$bin"
      PG_AS=("${as[@]}")
      trap stop_postgres EXIT
      export REIN_TEST_POSTGRES="postgres://rein@127.0.0.1:$port/postgres?sslmode=disable"
      echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
      return 0
    fi
  done
  echo "PostgreSQL did not start:"; cat "$PG_DIR/log"
  return 1
}

stop_postgres() {
  [ -n "${PG_DIR:-}" ] || return 0
  "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
}
