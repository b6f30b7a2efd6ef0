# syntax=docker/dockerfile:1

# Build the manager image's laxity: one static executable with the manager,
# plan and version commands. The lean build tag leaves out the demo and the
# experiments (a local control plane, a plotting library), which the operator
# does not need: 78 MB instead of the full CLI's 87 MB.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
# What `laxity version` and the manager's start-up log report.
ARG VERSION=dev
ARG REVISION=

WORKDIR /workspace
# Download modules in their own layer so source edits do not refetch them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -tags lean -trimpath \
      -ldflags="-s -w -X github.com/laxity-dev/laxity/internal/version.Version=${VERSION} -X github.com/laxity-dev/laxity/internal/version.Revision=${REVISION}" \
      -o /out/laxity .

# The runtime image is empty but for the binary, CA certificates and
# timezone data: no shell, no package manager, no distribution. It runs as an
# unprivileged numeric user, which needs no passwd entry.
FROM scratch
COPY --from=builder /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
COPY --from=builder /usr/share/zoneinfo /usr/share/zoneinfo
COPY --from=builder /out/laxity /laxity
USER 65532:65532

ENTRYPOINT ["/laxity"]
