# The MongoDB stand-in of the compose run on hosts where no MongoDB image can be pulled:
# FerretDB (MongoDB wire protocol on SQLite), the binary the project builds for its tests
# (.cache/ferretdb), on the Python base image (glibc for the binary, python for the probe).
# deploy/compose/images.sh builds it with that binary as the whole context.
ARG BASE_IMAGE=python:3.11.17-slim-trixie
FROM ${BASE_IMAGE}
COPY ferretdb /usr/local/bin/ferretdb
RUN mkdir -p /data/db && chown 10001:10001 /data/db
USER 10001:10001
EXPOSE 27017
# FerretDB's own readiness probe, on its debug listener (loopback inside the container).
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8088/debug/readyz', timeout=3)"]
CMD ["ferretdb", "--handler=sqlite", "--sqlite-url=file:/data/db/", "--listen-addr=0.0.0.0:27017", \
     "--state-dir=/data/db", "--debug-addr=127.0.0.1:8088", "--telemetry=disable", \
     "--log-level=warn"]
