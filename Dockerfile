# podsizer: one image for both roles (`podsizer run` = recommender, `podsizer webhook` = admission webhook).
# Build: podman build -t podsizer:0.1.0 .   (or docker build / buildah bud; see docs/install.md)
# Runs as an arbitrary non-root UID with group 0 (OpenShift restricted-v2), with a read-only root filesystem:
# nothing is written outside /tmp (mount an emptyDir there).
#
# BASE: the image both stages start from. Any image laid out as UBI 9's python-311 works: a virtual environment
# at /opt/app-root first on PATH (owned by uid 1001, group 0, group-writable), Python 3.11. The real-node
# tests build it FROM a Debian stand-in of that layout (tests/controlplane/images/base.Containerfile).
ARG BASE=registry.access.redhat.com/ubi9/python-311:9.8-1779945715

# ---- build stage: wheels for podsizer and its dependencies, with every runtime extra (aws: botocore, which
# SigV4 signing for AWS Managed Prometheus imports when PODSIZER_PROMETHEUS_SIGV4_REGION is set)
FROM ${BASE} AS build
USER 1001
WORKDIR /opt/app-root/src
COPY --chown=1001:0 pyproject.toml README.md ./
COPY --chown=1001:0 podsizer ./podsizer
COPY --chown=1001:0 recommender ./recommender
COPY --chown=1001:0 console ./console
COPY --chown=1001:0 webhook ./webhook
COPY --chown=1001:0 updater ./updater
COPY --chown=1001:0 certs ./certs
RUN pip install --no-cache-dir --upgrade "pip>=24" "wheel>=0.43" \
    && pip wheel --no-cache-dir --wheel-dir /tmp/wheels ".[aws]"

# ---- runtime stage
FROM ${BASE}
ARG VERSION=0.1.0
ARG RELEASE=1
LABEL name="podsizer" \
      vendor="podsizer" \
      version="${VERSION}" \
      release="${RELEASE}" \
      summary="Right-sizes Kubernetes and OpenShift workloads, GPUs included" \
      description="podsizer recommends container requests and limits (GPU count and MIG slice too) from Prometheus and NVIDIA DCGM metrics, and applies them to new pods through a mutating admission webhook." \
      maintainer="podsizer maintainers <maintainers@podsizer.io>" \
      io.k8s.display-name="podsizer" \
      io.k8s.description="Workload right-sizing recommender and admission webhook" \
      io.openshift.tags="rightsizing,gpu,admission-webhook" \
      org.opencontainers.image.licenses="Apache-2.0"

USER 0
COPY LICENSE /licenses/LICENSE
COPY --from=build /tmp/wheels /tmp/wheels
RUN pip install --no-cache-dir --no-index --find-links /tmp/wheels "podsizer[aws]" \
    && rm -rf /tmp/wheels /opt/app-root/src/.cache \
    && chgrp -R 0 /opt/app-root /licenses \
    && chmod -R g=u /opt/app-root /licenses

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    TMPDIR=/tmp
WORKDIR /tmp
USER 1001
EXPOSE 8443 8080
ENTRYPOINT ["podsizer"]
