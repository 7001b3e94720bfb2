# PostgreSQL for the tests of the PostgreSQL backend: one cluster of
# Debian's packages on a loopback port, fsync on, trusted local logins.
# The server does not run as root: Debian's wrappers (pg_createcluster,
# pg_ctlcluster) run it as the user postgres. `make pg-start` and
# `make pg-stop` may run any number of times.

PG_PORT ?= 55432
PG_CLUSTER ?= kvtest
# The newest server installed (Debian 12 ships 15).
PG_VERSION ?= $(shell ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)
# The tests of the PostgreSQL backend read this; without it they fail
# under CI=true and, outside CI, say how to start a server.
export TINYSTORE_TEST_PG ?= postgres://postgres@127.0.0.1:$(PG_PORT)/postgres
# The server also speaks TLS, with a certificate for DNS:localhost (not for
# 127.0.0.1, so that verify-full by address fails) signed by a CA of its
# own, made by pg-start; the TLS tests trust this CA file.
PG_TLS_DIR = /etc/postgresql/$(PG_VERSION)/$(PG_CLUSTER)/tls
export TINYSTORE_TEST_PG_CA ?= $(PG_TLS_DIR)/ca.pem

.PHONY: pg-start pg-stop
# The Rust tests include the PostgreSQL backend's (core/tests/postgres_*,
# the process tests, the conformance runner's PostgreSQL run, cli/tests'
# `kv copy`). The Python, Node and Bun, and Go conformance runners run every
# case on PostgreSQL too, each case in an empty schema of its own
# (conformance_<language>_<n>, dropped with psql first); the case files
# they may see refused are listed once, in tests/conformance/not_on_postgres.json.
test-rust: pg-start
test-conformance-python test-conformance-node test-go: pg-start
pg-start:
	@test -n "$(PG_VERSION)" || { echo "pg-start: no PostgreSQL server in /usr/lib/postgresql: apt-get install -y postgresql"; exit 1; }
	@if ! pg_lsclusters -h | awk '{print $$1"/"$$2}' | grep -qx "$(PG_VERSION)/$(PG_CLUSTER)"; then \
	  pg_createcluster -p $(PG_PORT) $(PG_VERSION) $(PG_CLUSTER) -- -A trust >/dev/null; \
	  printf "listen_addresses = '127.0.0.1'\nfsync = on\nmax_connections = 200\n" \
	    > /etc/postgresql/$(PG_VERSION)/$(PG_CLUSTER)/conf.d/tinystore-tests.conf; \
	fi
	@conf=/etc/postgresql/$(PG_VERSION)/$(PG_CLUSTER)/conf.d/tinystore-tls.conf; d=$(PG_TLS_DIR); \
	if [ ! -f "$$conf" ]; then \
	  command -v openssl >/dev/null || { echo "pg-start: no openssl to make the test server's certificate: apt-get install -y openssl"; exit 1; }; \
	  mkdir -p $$d; \
	  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=TinyStore test CA" \
	    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
	    -keyout $$d/ca.key -out $$d/ca.pem 2>/dev/null; \
	  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout $$d/server.key -out $$d/server.csr 2>/dev/null; \
	  printf "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n" > $$d/server.ext; \
	  openssl x509 -req -in $$d/server.csr -CA $$d/ca.pem -CAkey $$d/ca.key -CAcreateserial -days 3650 \
	    -extfile $$d/server.ext -out $$d/server.pem 2>/dev/null; \
	  chmod 644 $$d/ca.pem; chmod 600 $$d/server.key; chown postgres: $$d/server.key $$d/server.pem 2>/dev/null || true; \
	  printf "ssl = on\nssl_cert_file = '$$d/server.pem'\nssl_key_file = '$$d/server.key'\n" > $$conf; \
	  if pg_lsclusters -h | awk '$$1"/"$$2=="$(PG_VERSION)/$(PG_CLUSTER)" {print $$4}' | grep -qx online; then \
	    pg_ctlcluster $(PG_VERSION) $(PG_CLUSTER) reload; \
	  fi; \
	fi
	@if ! pg_lsclusters -h | awk '$$1"/"$$2=="$(PG_VERSION)/$(PG_CLUSTER)" {print $$4}' | grep -qx online; then \
	  pg_ctlcluster $(PG_VERSION) $(PG_CLUSTER) start; \
	fi
	@for i in $$(seq 50); do pg_isready -q -h 127.0.0.1 -p $(PG_PORT) && break; sleep 0.2; done
	@pg_isready -h 127.0.0.1 -p $(PG_PORT)

pg-stop:
	@if pg_lsclusters -h 2>/dev/null | awk '$$1"/"$$2=="$(PG_VERSION)/$(PG_CLUSTER)" {print $$4}' | grep -qx online; then \
	  pg_ctlcluster $(PG_VERSION) $(PG_CLUSTER) stop -m fast; \
	fi
	@echo "pg-stop: cluster $(PG_VERSION)/$(PG_CLUSTER) is down"

# Durable sets and gets on a PostgreSQL store at 1, 8 and 64 threads.
.PHONY: bench-postgres
BENCH_TARGETS += bench-postgres
bench-postgres: pg-start
	cargo run --release -p tinystore-bench --bin postgres
