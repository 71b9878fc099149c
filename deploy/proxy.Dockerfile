# The proxy image: one static binary on an empty base.
#
# Built by `make up` (and the integration tests) through docker-compose.yml,
# with the repository root as context; .dockerignore lets only bin/ through.
# The binary comes from `make build` on the host (CGO_ENABLED=0, TLS roots
# embedded), so nothing is pulled and the image holds nothing but it.
FROM scratch
COPY bin/proxy /proxy
# /data, writable by the proxy's user: the SQLite file of per-user keys and
# usage (general_settings.database_url: sqlite:///data/dragoman.db) on the
# volume docker-compose.yml mounts there; a volume mounted on it takes its
# owner from the image.
COPY --chown=65534:65534 deploy/data/ /data/
# nobody:nogroup; a scratch image has no /etc/passwd, so numeric ids.
USER 65534:65534
EXPOSE 4000
# No shell or curl in the image: the binary probes its own /healthz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/proxy", "--healthcheck", "--port", "4000"]
ENTRYPOINT ["/proxy"]
CMD ["--config", "/etc/dragoman/config.yaml", "--port", "4000"]
