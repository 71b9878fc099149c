# The warmer image: one static binary on an empty base (see proxy.Dockerfile).
# Configure it by environment: WARMER_CONFIG (a proxy config file) or
# WARMER_BACKEND_URL + WARMER_MODELS + WARMER_API_KEY; WARMER_INTERVAL.
FROM scratch
COPY bin/warmer /warmer
USER 65534:65534
# The daemon serves GET /healthz on WARMER_HEALTH_ADDR (127.0.0.1:8081 by
# default); --healthcheck probes it from inside the container.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/warmer", "--healthcheck"]
ENTRYPOINT ["/warmer"]
