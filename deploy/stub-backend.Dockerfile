# The stub backend image: a deterministic Chat Completions server for the demo
# stack and the integration tests (see proxy.Dockerfile for how it is built).
FROM scratch
COPY bin/stub-backend /stub-backend
USER 65534:65534
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/stub-backend", "--healthcheck", "--port", "8000"]
ENTRYPOINT ["/stub-backend"]
CMD ["--port", "8000"]
