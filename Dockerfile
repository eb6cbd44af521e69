# Countersign's production image: one image, every role; the command picks the role
#   docker build -t countersign .
#   docker run countersign serve --role worker        (or mcp, approvals, issuer)
# Two stages: `build` installs every dependency from the lockfile (with the compilers a native
# addon may need), compiles the TypeScript with `npm ci`'s `prepare` (`npm run build`: tsc -b into
# dist/ and each package's dist/, and the prebuilt workflow bundle dist/workflow-bundle.js), then
# prunes the development dependencies; the final stage copies the compiled tree and the production
# dependencies onto the slim Node 20 image and runs as the unprivileged `node` user. No TypeScript
# runs in the image, nothing is installed at container start, and no secret is in the image: they
# come from the environment and the data volume (docs/OPERATIONS.md §Containers). The build steps
# are replayed without Docker by scripts/image-build-check.ts.

FROM node:20.20.2-bookworm AS deps
WORKDIR /app
COPY package.json package-lock.json tsconfig.base.json tsconfig.build.json tsconfig.dist.json ./
COPY packages ./packages
COPY scripts/bundle-workflows.mjs scripts/install-temporal.mjs ./scripts/
COPY bin ./bin
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

FROM node:20.20.2-bookworm-slim
ENV NODE_ENV=production \
    COUNTERSIGN_HOST=0.0.0.0 \
    COUNTERSIGN_DATA_DIR=/var/lib/countersign
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=deps /app/packages ./packages
COPY --from=deps /app/dist ./dist
COPY package.json package-lock.json ./
COPY bin ./bin
COPY scripts/install-temporal.mjs ./scripts/
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
