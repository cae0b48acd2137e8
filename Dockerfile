# solportal: production image (runtime dependencies only; tsx runs the TypeScript sources, so
# there is no build step).
#
#   docker build -t solportal .
#   docker run --rm -p 3000:3000 solportal                      # the bundled sample
#   docker run --rm -p 3000:3000 -v solportal-data:/data solportal serve --dataset-dir /data/dataset
#   docker run --rm -v solportal-data:/data -v "$PWD/archives:/archives:ro" solportal import /data/dataset /archives
#
# The lock file pins the linux-x64 (glibc) builds of the native packages (lmdb, msgpackr-extract,
# esbuild): build for linux/amd64.

ARG NODE_IMAGE=node:20-bookworm-slim

# --- stage 1: production dependencies --------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev: no benchmark (duckdb), sample-generation (litesvm) or lint packages
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- stage 2: runtime ------------------------------------------------------------------------
FROM ${NODE_IMAGE}
# tini as PID 1: forwards SIGTERM/SIGINT to node (which then drains and closes its stores) and
# reaps children
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
COPY data ./data
# datasets live under /data (mount a volume there), owned by the unprivileged `node` user (uid 1000)
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000
# healthy once the datasets are loaded and have a head (GET /ready; /health is mere liveness)
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "bin/solportal.js"]
CMD ["serve"]
