# syntax=docker/dockerfile:1
# Build: docker build --build-arg VERSION=$(git describe --tags --always --dirty) --build-arg COMMIT=$(git rev-parse HEAD) -t fusebox .
# Run:   docker run -p 8080:8080 -e FUSEBOX_STORAGE_CONNECTION_STRING=... -e FUSEBOX_SESSION_KEY=... fusebox
# Everything is configured through FUSEBOX_* variables: see docs/configuration.md.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# templ output is committed, so the build needs no generator; a static,
# stripped binary runs on a distroless base. VERSION and COMMIT are what
# fusebox version, the page footer, fusebox_build_info and the traces'
# service.version say (.git is not in the build context).
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
    -ldflags="-s -w -X github.com/fusebox/fusebox/internal/buildinfo.version=${VERSION} -X github.com/fusebox/fusebox/internal/buildinfo.commit=${COMMIT}" \
    -o /out/fusebox ./cmd/web

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.version=${VERSION} org.opencontainers.image.source=https://github.com/fusebox/fusebox
# distroless/static carries CA certificates and tzdata, and runs as the
# unprivileged user 65532.
COPY --from=build /out/fusebox /fusebox
ENV FUSEBOX_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/fusebox"]
CMD ["serve"]
