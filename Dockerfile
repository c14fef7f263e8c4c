# gokafka as a minimal container image: one static binary FROM scratch,
# running as a non-root user, data in the /var/lib/gokafka volume.
#
#   docker build -t gokafka .
#   docker run -p 9092:9092 -p 9644:9644 gokafka
#
# serves clients on the host at localhost:9092 and the HTTP listener
# (/readyz, /metrics, the console) at http://localhost:9644/. Clients that
# reach the container by another name set GOKAFKA_ADVERTISED_LISTENERS,
# e.g. -e GOKAFKA_ADVERTISED_LISTENERS=PLAINTEXT://myhost:9092; the broker
# refuses to start rather than advertise an address clients cannot dial.
# docker-compose.yml runs a three-node cluster.
#
# cmd/gokafka's TestImageRunsInAnEmptyRoot reads this file: it runs the
# binary built as below in an empty root with the ENV and USER given here.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/gokafka ./cmd/gokafka \
 && mkdir -p /out/data

FROM scratch
COPY --from=build /out/gokafka /gokafka
COPY --from=build --chown=65532:65532 /out/data /var/lib/gokafka
USER 65532:65532
ENV GOKAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092
ENV GOKAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092
ENV GOKAFKA_LOG_DIRS=/var/lib/gokafka
ENV GOKAFKA_HTTP_LISTENER=0.0.0.0:9644
VOLUME /var/lib/gokafka
EXPOSE 9092 9644
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 CMD ["/gokafka", "healthcheck"]
ENTRYPOINT ["/gokafka"]
