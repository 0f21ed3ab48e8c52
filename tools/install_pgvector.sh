#!/usr/bin/env bash
# Build and install pgvector into the machine's PostgreSQL 15 from the vendored source, unless a
# pgvector of 0.8 or later (the first with iterative index scans) is installed already: then it
# prints nothing and changes nothing. The Postgres tests and bench/scoped.py need it; users
# install pgvector from their own package manager or image instead.
#
# Debian's archive has PostgreSQL 15 and its build headers but no pgvector, so the source is
# vendored beside the project (../shared/vendor/, see its README.md). Needs root (apt-get and
# `make install` into the server's directories); about a minute on 2 cores.
set -euo pipefail

major=15
bindir="/usr/lib/postgresql/$major/bin"
tarball="$(cd "$(dirname "$0")/../.." && pwd)/shared/vendor/pgvector-0.8.6-e48241b.tar.gz"
control="/usr/share/postgresql/$major/extension/vector.control"

installed_version() {
    if [[ -f "$control" ]]; then sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$control"; fi
}

version="$(installed_version)"
if [[ -n "$version" && "$(printf '0.8\n%s\n' "$version" | sort -V | head -n1)" == "0.8" ]]; then
    exit 0
fi

if [[ "$(id -u)" != 0 ]]; then
    echo "install_pgvector.sh: pgvector >= 0.8 is not installed, and installing it needs root" >&2
    exit 1
fi

# The server itself where it is missing, the headers to build against, and a compiler.
if [[ ! -x "$bindir/initdb" || ! -f "/usr/include/postgresql/$major/server/postgres.h" ]] \
    || ! command -v make >/dev/null || ! command -v gcc >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "postgresql-$major" "postgresql-server-dev-$major" make gcc >/dev/null
fi

source_dir="$(mktemp -d)"
trap 'rm -rf "$source_dir"' EXIT
tar -xzf "$tarball" -C "$source_dir" --strip-components=1
log="$source_dir/build.log"
if ! make -C "$source_dir" -j"$(nproc)" PG_CONFIG="$bindir/pg_config" >"$log" 2>&1 \
    || ! make -C "$source_dir" install PG_CONFIG="$bindir/pg_config" >>"$log" 2>&1; then
    cat "$log" >&2
    echo "install_pgvector.sh: building pgvector from $tarball failed (its log is above)" >&2
    exit 1
fi
echo "install_pgvector.sh: pgvector $(installed_version) built and installed for PostgreSQL $major"
