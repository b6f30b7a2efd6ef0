# syntax=docker/dockerfile:1

# Build the laxity binary: one static executable that serves as the manager
# and as the offline `plan` and `demo` CLI.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Download modules in their own layer so source edits do not refetch them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/laxity .

# The runtime image is empty but for the binary, CA certificates and
# timezone data: no shell, no package manager, no distribution. It runs as an
# unprivileged numeric user, which needs no passwd entry.
FROM scratch
COPY --from=builder /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
COPY --from=builder /usr/share/zoneinfo /usr/share/zoneinfo
COPY --from=builder /out/laxity /laxity
USER 65532:65532

ENTRYPOINT ["/laxity"]
