# Countersign's production image: one image, every role; the command picks the role
#   docker build -t countersign .
#   docker run countersign serve --role worker        (or mcp, approvals, issuer)
# Two stages: `deps` installs the production dependencies from the lockfile (with the compilers a
# native addon may need), the final stage copies them and the sources onto the slim Node 20 image
# and runs as the unprivileged `node` user. Nothing is installed at container start, and no secret
# is in the image: they come from the environment and the data volume (docs/OPERATIONS.md
# §Containers). The build steps are replayed without Docker by scripts/image-build-check.mjs.

FROM node:20.20.2-bookworm AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20.20.2-bookworm-slim
ENV NODE_ENV=production \
    COUNTERSIGN_HOST=0.0.0.0 \
    COUNTERSIGN_DATA_DIR=/var/lib/countersign
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY policies ./policies
RUN mkdir -p /var/lib/countersign && chown node:node /var/lib/countersign
USER node
VOLUME ["/var/lib/countersign"]
EXPOSE 8787 8788 8789 8790
# /livez of whichever role runs, at the default ports of src/config.ts; docker-compose.yml probes
# each role's /readyz at its own port instead.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "bin/healthcheck.mjs", "http://127.0.0.1:8787/livez", "http://127.0.0.1:8788/livez", "http://127.0.0.1:8789/livez", "http://127.0.0.1:8790/livez"]
ENTRYPOINT ["node", "bin/countersign.mjs"]
CMD ["serve", "--role", "mcp"]
