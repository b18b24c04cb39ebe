# The gang-scheduler image: built from source on Debian bookworm, run on
# bookworm-slim with only the shared libraries it links, as a non-root user.
# From the repository root:
#
#   docker build -f deploy/docker/gang-scheduler.Dockerfile -t hybridjob/gang-scheduler:0.1.0 .
#
# The binary writes nothing to disk, so the container runs with
# readOnlyRootFilesystem (deploy/ mounts an emptyDir at /tmp all the same).

FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libcpprest-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY include/ include/
COPY src/ src/
# The Release flavour `make test` builds and tests (the Makefile's BUILD_TYPE
# and CMAKE_CXX_FLAGS_RELEASE, without its line tables).
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
      -DHYBRIDJOB_BUILD_TESTS=OFF -DHYBRIDJOB_BUILD_BENCH=OFF \
 && cmake --build build -j "$(nproc)" --target gang-scheduler \
 && strip build/bin/gang-scheduler

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates libcpprest2.10 libyaml-cpp0.7 libspdlog1.10 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/bin/gang-scheduler /usr/local/bin/gang-scheduler
USER 65532:65532
EXPOSE 10261 10262
ENTRYPOINT ["/usr/local/bin/gang-scheduler"]
